// My bookings (GET /bookings, the signed-in customer's own), newest first: each with its seats and tickets, a
// booked one with its QR ticket (the one its e-mail carries) and a Cancel button while cancelling is allowed
// (the server decides: 409 CANCELLATION_CLOSED after the deadline). The customer signs in first (auth.js).
"use strict";

const STATUS_TEXT = { HELD: N_("held, not paid yet"), BOOKED: N_("booked"), CANCELLED: N_("cancelled (refunded in full)"),
                      RELEASED: N_("released"), EXPIRED: N_("expired") };
const el = (id) => document.getElementById(id);

async function call(url, method = "GET", renewed = false) {
  const r = await fetch(url, { method, headers: { authorization: `Bearer ${Auth.token()}` } });
  if (r.status === 401 && !renewed && await Auth.renew()) return call(url, method, true);
  return { status: r.status, body: r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text() };
}

function localTime(iso, zone) {
  return localeTime(iso, { timeZone: zone || "UTC", dateStyle: "full", timeStyle: "short", hour12: false });
}

async function qr(item, booking) {
  const r = await call(`/bookings/${booking.bookingId}/qr`);
  if (r.status !== 200) return;
  const box = Object.assign(document.createElement("div"), { className: "qr" });
  box.innerHTML = r.body;  // our own server's SVG of the booking's signed ticket
  box.title = booking.ticket;
  const svg = box.querySelector("svg");
  if (svg) {  // an image with a name: the ticket's QR code, for a screen reader
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", _("QR ticket of booking {booking}", { booking: booking.bookingId }));
  }
  item.append(box);
}

function line(b) {
  const item = document.createElement("li");
  item.dataset.booking = b.bookingId;
  item.dataset.status = b.status;
  const where = [b.cinema, b.hall].filter(Boolean).join(", ");
  const seats = ticketsText(b.tickets, b.currency) || b.seats.join(", ");
  const at = where ? " " + _("at {place}", { place: where }) : "";
  const seatsText = _("Seats: {seats}.", { seats });
  item.append(Object.assign(document.createElement("strong"), { textContent: b.title }),
              ` ${localTime(b.startsAt, b.timeZone)}${at}. ${seatsText} ${money(b.amountCents, b.currency)}. `,
              Object.assign(document.createElement("span"), { className: "status",
                                                               textContent: _(STATUS_TEXT[b.status] || b.status) }));
  if (b.status === "BOOKED") {
    const cancel = Object.assign(document.createElement("button"), { type: "button", textContent: _("Cancel"),
                                                                      className: "cancel" });
    cancel.setAttribute("aria-label", _("Cancel the booking of {seats}", { seats: b.seats.join(", ") }));
    cancel.addEventListener("click", () => cancelBooking(b, cancel));
    item.append(" ", cancel);
    qr(item, b);
  }
  return item;
}

async function cancelBooking(b, button) {
  button.disabled = true;
  const r = await call(`/bookings/${b.bookingId}/cancel`, "POST");
  if (r.status === 202) {
    el("message").textContent = _("Booking of {seats} cancelled: you will be refunded in full.",
                                  { seats: b.seats.join(", ") });
  } else {
    el("message").textContent = (r.body && r.body.message) || _("The cancellation failed ({status}).",
                                                                 { status: r.status });
    button.disabled = false;
  }
  await show();
}

async function show() {
  const r = await call("/bookings");
  if (r.status === 401) return signInFirst();
  if (r.status !== 200) {
    el("message").textContent = _("Your bookings cannot be shown now ({status}).", { status: r.status });
    return;
  }
  el("bookings").replaceChildren(...r.body.bookings.map(line));
  if (!r.body.bookings.length) el("message").textContent = _("No bookings yet.");
}

function signInFirst() {
  el("token-box").hidden = Auth.withProvider;
  el("message").textContent = Auth.withProvider ? _("Sign in to see your bookings.") : _("Paste your customer token.");
}

async function main() {
  el("save-token").addEventListener("click", () => {
    Auth.usePasted(el("token").value.trim());
    el("token-box").hidden = true;
    show();
  });
  document.addEventListener("localechange", () => { if (Auth.token()) show(); });
  await Auth.ready;
  if (Auth.token()) show(); else signInFirst();
}

main();
