// My bookings (GET /bookings, the signed-in customer's own), newest first: each with its seats and tickets, a
// booked one with its QR ticket (the one its e-mail carries) and a Cancel button while cancelling is allowed
// (the server decides: 409 CANCELLATION_CLOSED after the deadline). The token is the seat-map page's.
"use strict";

const STATUS_TEXT = { HELD: "held, not paid yet", BOOKED: "booked", CANCELLED: "cancelled (refunded in full)",
                      RELEASED: "released", EXPIRED: "expired" };
const el = (id) => document.getElementById(id);
let token = localStorage.getItem("ticketing.token");

async function call(url, method = "GET") {
  const r = await fetch(url, { method, headers: { authorization: `Bearer ${token}` } });
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
  if (r.status === 401) {
    el("token-box").hidden = false;
    el("message").textContent = "Your token was refused: paste a new one.";
    return;
  }
  if (r.status !== 200) {
    el("message").textContent = `Your bookings cannot be shown now (${r.status}).`;
    return;
  }
  el("bookings").replaceChildren(...r.body.bookings.map(line));
  if (!r.body.bookings.length) el("message").textContent = "No bookings yet.";
}

function main() {
  el("token-box").hidden = Boolean(token);
  el("save-token").addEventListener("click", () => {
    token = el("token").value.trim();
    localStorage.setItem("ticketing.token", token);
    el("token-box").hidden = true;
    show();
  });
  if (token) show();
}

main();
