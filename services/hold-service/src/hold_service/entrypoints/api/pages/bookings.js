// My bookings (GET /bookings, the signed-in customer's own), newest first: each with its seats and tickets, a
// booked one with its QR ticket (the one its e-mail carries) and a Cancel button while cancelling is allowed
// (the server decides: 409 CANCELLATION_CLOSED after the deadline). The customer signs in first (auth.js).
"use strict";

const STATUS_TEXT = { HELD: "held, not paid yet", BOOKED: "booked", CANCELLED: "cancelled (refunded in full)",
                      RELEASED: "released", EXPIRED: "expired" };
const el = (id) => document.getElementById(id);

async function call(url, method = "GET", renewed = false) {
  const r = await fetch(url, { method, headers: { authorization: `Bearer ${Auth.token()}` } });
  if (r.status === 401 && !renewed && await Auth.renew()) return call(url, method, true);
  return { status: r.status, body: r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text() };
}

function localTime(iso, zone) {
  return new Date(iso).toLocaleString([], { timeZone: zone || "UTC", dateStyle: "full", timeStyle: "short",
                                           hour12: false });
}

async function qr(item, booking) {
  const r = await call(`/bookings/${booking.bookingId}/qr`);
  if (r.status !== 200) return;
  const box = Object.assign(document.createElement("div"), { className: "qr" });
  box.innerHTML = r.body;  // our own server's SVG of the booking's signed ticket
  box.title = booking.ticket;
  item.append(box);
}

function line(b) {
  const item = document.createElement("li");
  item.dataset.booking = b.bookingId;
  item.dataset.status = b.status;
  const where = [b.cinema, b.hall].filter(Boolean).join(", ");
  item.append(Object.assign(document.createElement("strong"), { textContent: b.title }),
              ` ${localTime(b.startsAt, b.timeZone)}${where ? ` at ${where}` : ""}. Seats: ${ticketsText(b.tickets) ||
                b.seats.join(", ")}. ${money(b.amountCents)}. `,
              Object.assign(document.createElement("span"), { className: "status", textContent: STATUS_TEXT[b.status] }));
  if (b.status === "BOOKED") {
    const cancel = Object.assign(document.createElement("button"), { type: "button", textContent: "Cancel",
                                                                      className: "cancel" });
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
    el("message").textContent = `Booking of ${b.seats.join(", ")} cancelled: you will be refunded in full.`;
  } else {
    el("message").textContent = (r.body && r.body.message) || `The cancellation failed (${r.status}).`;
    button.disabled = false;
  }
  await show();
}

async function show() {
  const r = await call("/bookings");
  if (r.status === 401) return signInFirst();
  if (r.status !== 200) {
    el("message").textContent = `Your bookings cannot be shown now (${r.status}).`;
    return;
  }
  el("bookings").replaceChildren(...r.body.bookings.map(line));
  if (!r.body.bookings.length) el("message").textContent = "No bookings yet.";
}

function signInFirst() {
  el("token-box").hidden = Auth.withProvider;
  el("message").textContent = Auth.withProvider ? "Sign in to see your bookings." : "Paste your customer token.";
}

async function main() {
  el("save-token").addEventListener("click", () => {
    Auth.usePasted(el("token").value.trim());
    el("token-box").hidden = true;
    show();
  });
  await Auth.ready;
  if (Auth.token()) show(); else signInFirst();
}

main();
