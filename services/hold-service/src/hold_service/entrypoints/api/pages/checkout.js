// The customer page's checkout: payment-service's POST /holds/{id}/checkout opens the gateway's hosted page in a
// new window; this page then follows the payment, and the hold until it is booked (or ends first: refunded).
// Release gives the seats back. Loaded before seat-map.js, whose state and helpers these functions use once the
// page has started.
"use strict";

const PAYMENT_ENDS = { FAILED: N_("failed"), EXPIRED: N_("expired"), REFUNDED: N_("refunded") };

async function checkout() {
  const hold = state.hold;
  const payWindow = window.open("", "ticketing-pay");  // opened by the click itself: no popup blocker
  hold.attempt += 1;  // a new Idempotency-Key per attempt: a declined payment may be tried again
  const r = await api(`${state.paymentUrl}/holds/${hold.holdId}/checkout`, {
    method: "POST", body: {}, headers: { "idempotency-key": `${hold.holdId}-${hold.attempt}` } });
  if (r.status !== 201) {
    if (payWindow) payWindow.close();
    return say((r.body && r.body.message) || _("The checkout failed ({status}).", { status: r.status }));
  }
  // The checkout extended the hold past the payment session: the countdown follows the hold as the server has it.
  const now = await api(`/holds/${hold.holdId}`);
  const expiresAt = now.status === 200 ? now.body.expiresAt : hold.expiresAt;
  saveHold({ ...hold, expiresAt, paymentId: r.body.paymentId });
  if (payWindow) payWindow.location.href = r.body.redirectUrl;
  else window.location.assign(r.body.redirectUrl);
  say(_("Pay in the payment window; this page shows the result."));
  watchPayment(r.body.paymentId);
}

async function watchPayment(paymentId) {
  for (;;) {
    await new Promise((done) => setTimeout(done, 1000));
    if (!state.hold || state.hold.paymentId !== paymentId) return;
    const payment = await api(`${state.paymentUrl}/payments/${paymentId}`);
    const status = payment.body && payment.body.status;
    if (status === "SUCCEEDED") return watchBooking();
    if (["FAILED", "EXPIRED", "REFUNDED"].includes(status)) {
      saveHold({ ...state.hold, paymentId: null });
      return say(_("The payment did not go through ({status}).", { status: _(PAYMENT_ENDS[status]) }));
    }
  }
}

async function watchBooking() {
  say(_("Paid: confirming your booking..."));
  for (;;) {
    const r = await api(`/holds/${state.hold.holdId}`);
    const status = r.body && r.body.status;
    if (status === "BOOKED" || status === "EXPIRED" || status === "RELEASED") return showResult(status);
    await new Promise((done) => setTimeout(done, 1000));
  }
}

function showResult(status) {
  const seats = state.hold.seats.join(", ");
  $("result").dataset.outcome = status;
  $("result").textContent = status === "BOOKED"
    ? _("Booked: {seats}. Your tickets are on their way by e-mail.", { seats })
    : _("Your hold ended before the payment arrived; the payment is refunded.");
  saveHold({ ...state.hold, status });
  say("");
}

async function release() {
  const r = await api(`/holds/${state.hold.holdId}`, { method: "DELETE" });
  if (r.status === 204) {
    saveHold(null);
    say(_("Released: the seats are back on sale."));
  }
  else say((r.body && r.body.message) || _("The release failed ({status}).", { status: r.status }));
}

// A reload of the page: the hold kept in this browser, as the server sees it now. True when there is one to
// show (then the map comes at once: a live hold's seats are the customer's whatever the room says).
async function resume() {
  if (!state.hold || state.hold.status !== "HELD" || !Auth.token()) return false;
  const r = await api(`/holds/${state.hold.holdId}`);
  if (r.status !== 200 || r.body.status === "EXPIRED" || r.body.status === "RELEASED") {
    saveHold(null);
    return false;
  }
  admitted(room.admission());
  if (r.body.status === "BOOKED") {
    showResult("BOOKED");
    return true;
  }
  saveHold({ ...state.hold, expiresAt: r.body.expiresAt, offsetMs: clockOffset(r.date) });
  if (state.hold.paymentId) watchPayment(state.hold.paymentId);
  return true;
}
