// The customer's page: the live seat map, pick up to 8 seats, hold them, a countdown to the hold's expiry,
// checkout on the gateway's hosted page (payment-service's POST /holds/{id}/checkout gives its URL), the
// result. The customer token is the one `make token` prints, pasted once and kept in this browser
// (localStorage); production would take it from the chain's sign-in instead (README, "The seat map").
"use strict";

const MAX_SEATS = 8;
const showtimeId = showtimeFromPath();
const $ = (id) => document.getElementById(id);
const seatButtons = new Map();
const state = {
  token: localStorage.getItem("ticketing.token"),
  picked: new Set(),
  hold: JSON.parse(localStorage.getItem(`ticketing.hold.${showtimeId}`) || "null"),
  paymentUrl: "",
  admissionToken: null,  // HOOK(waiting-room): set once the queue admits this customer
};
const live = new LiveSeatMap(showtimeId, { onSnapshot: drawMap, onChange: changed, onState: showState });

function uid() {  // crypto.randomUUID needs a secure context; http://<host> of a dev machine is not one
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

function customerOf(token) {
  try {
    return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
  } catch {
    return null;
  }
}

async function api(url, { method = "GET", body, headers = {} } = {}) {
  const all = { ...headers, ...(body ? { "content-type": "application/json" } : {}) };
  if (state.token) all.authorization = `Bearer ${state.token}`;
  const response = await fetch(url, { method, headers: all, body: body ? JSON.stringify(body) : undefined });
  const json = response.status === 204 ? null : await response.json().catch(() => null);
  return { status: response.status, body: json, date: Date.parse(response.headers.get("date")) };
}

// The countdown runs on the server's clock: its Date header against ours. The header is whole seconds and
// may be up to a second old, so the server's time is taken as the middle of that range.
function clockOffset(date) {
  return Number.isNaN(date) ? 0 : date + 1000 - Date.now();
}

function say(text) { $("message").textContent = text; }

function saveHold(hold) {
  state.hold = hold;
  const key = `ticketing.hold.${showtimeId}`;
  if (hold) localStorage.setItem(key, JSON.stringify(hold)); else localStorage.removeItem(key);
  for (const code of seatButtons.keys()) drawSeat(code);
  drawPanel();
}

function mine(code) { return Boolean(state.hold && state.hold.seats.includes(code)); }

function drawMap(map) {
  const grid = $("map");
  grid.replaceChildren();
  seatButtons.clear();
  for (const [row, seats] of seatRows(map.seats)) {
    const line = document.createElement("div");
    line.className = "row";
    line.append(Object.assign(document.createElement("span"), { className: "row-name", textContent: row }));
    for (const [code] of seats) {
      const button = Object.assign(document.createElement("button"), { type: "button", className: "seat" });
      button.dataset.code = code;
      button.textContent = code.slice(row.length);
      button.addEventListener("click", () => pick(code));
      seatButtons.set(code, button);
      line.append(button);
    }
    grid.append(line);
  }
  for (const code of map.seats.keys()) drawSeat(code);
  drawPanel();
}

function changed(map, change) {
  for (const { code, status } of change.seats) {
    if (status !== "AVAILABLE" && state.picked.delete(code) && !mine(code)) say(`${code} was just taken.`);
    drawSeat(code);
  }
  drawPanel();
}

function drawSeat(code) {
  const button = seatButtons.get(code);
  const status = live.seats.get(code);
  button.dataset.status = status;
  button.dataset.mine = String(status !== "AVAILABLE" && mine(code));
  button.dataset.picked = String(state.picked.has(code));
  button.disabled = status !== "AVAILABLE" || Boolean(state.hold && state.hold.status === "HELD");
  button.title = `${code}: ${button.dataset.mine === "true" ? "yours" : status.toLowerCase()}`;
}

function pick(code) {
  if (state.picked.has(code)) state.picked.delete(code);
  else if (state.picked.size >= MAX_SEATS) return say(`At most ${MAX_SEATS} seats at once.`);
  else state.picked.add(code);
  drawSeat(code);
  drawPanel();
}

function drawPanel() {
  const held = state.hold && state.hold.status === "HELD";
  const picked = [...state.picked];
  $("picked").textContent = picked.length ? `Picked: ${picked.join(", ")}` : `Pick up to ${MAX_SEATS} seats.`;
  $("hold").disabled = held || picked.length === 0 || !state.token;
  $("my-hold").hidden = !held;
  if (held) {
    $("my-seats").textContent = state.hold.seats.join(", ");
    $("amount").textContent = `${(state.hold.amountCents / 100).toFixed(2)}`;
  }
  $("customer").textContent = state.token ? customerOf(state.token) ?? "?" : "nobody (no token)";
}

async function hold() {
  const seats = [...state.picked];
  $("hold").disabled = true;
  const headers = { "idempotency-key": uid() };
  if (state.admissionToken) headers["x-admission-token"] = state.admissionToken;
  const r = await api(`/showtimes/${showtimeId}/holds`, { method: "POST", body: { seats }, headers });
  if (r.status === 201) {
    state.picked.clear();
    saveHold({ ...r.body, status: "HELD", attempt: 0, offsetMs: clockOffset(r.date) });
    say("");
  } else if (r.status === 409 && r.body && r.body.seats) {
    say(`Taken meanwhile: ${r.body.seats.join(", ")}.`);
  } else if (r.status === 403 && r.body && r.body.error === "ADMISSION_REQUIRED") {
    waitingRoom();
  } else if (r.status === 401) {
    say("Your token was refused: paste a new one.");
    $("token-box").hidden = false;
  } else {
    say((r.body && r.body.message) || `The hold failed (${r.status}).`);
  }
  drawPanel();
}

// HOOK(waiting-room): join the queue here and show the position; keep it simple (one poll a few seconds).
function waitingRoom() {
  $("waiting-room").hidden = false;
  say("The waiting room is on for this showtime.");
}

function tick() {
  if (!state.hold || state.hold.status !== "HELD") return;
  const left = Date.parse(state.hold.expiresAt) - (Date.now() + state.hold.offsetMs);
  const seconds = Math.max(0, Math.ceil(left / 1000));
  $("countdown").textContent = `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
  if (left <= 0 && !state.hold.paymentId) {
    say("Your hold expired: the seats are free again for everyone.");
    saveHold(null);
  }
}

async function checkout() {
  const hold = state.hold;
  const payWindow = window.open("", "ticketing-pay");  // opened by the click itself: no popup blocker
  hold.attempt += 1;  // a new Idempotency-Key per attempt: a declined payment may be tried again
  const r = await api(`${state.paymentUrl}/holds/${hold.holdId}/checkout`, {
    method: "POST", body: {}, headers: { "idempotency-key": `${hold.holdId}-${hold.attempt}` } });
  if (r.status !== 201) {
    if (payWindow) payWindow.close();
    return say((r.body && r.body.message) || `The checkout failed (${r.status}).`);
  }
  // The checkout extended the hold past the payment session: the countdown follows the hold as the server has it.
  const now = await api(`/holds/${hold.holdId}`);
  const expiresAt = now.status === 200 ? now.body.expiresAt : hold.expiresAt;
  saveHold({ ...hold, expiresAt, paymentId: r.body.paymentId });
  if (payWindow) payWindow.location.href = r.body.redirectUrl;
  else window.location.assign(r.body.redirectUrl);
  say("Pay in the payment window; this page shows the result.");
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
      return say(`The payment did not go through (${status.toLowerCase()}).`);
    }
  }
}

async function watchBooking() {
  say("Paid: confirming your booking...");
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
    ? `Booked: ${seats}. Your tickets are on their way by e-mail.`
    : `Your hold ended before the payment arrived; the payment is refunded.`;
  saveHold({ ...state.hold, status });
  say("");
}

async function release() {
  const r = await api(`/holds/${state.hold.holdId}`, { method: "DELETE" });
  if (r.status === 204) saveHold(null);
  else say((r.body && r.body.message) || `The release failed (${r.status}).`);
}

async function resume() {  // a reload of the page: the hold kept in this browser, as the server sees it now
  if (!state.hold || state.hold.status !== "HELD" || !state.token) return;
  const r = await api(`/holds/${state.hold.holdId}`);
  if (r.status !== 200 || r.body.status === "EXPIRED" || r.body.status === "RELEASED") return saveHold(null);
  if (r.body.status === "BOOKED") return showResult("BOOKED");
  saveHold({ ...state.hold, expiresAt: r.body.expiresAt, offsetMs: clockOffset(r.date) });
  if (state.hold.paymentId) watchPayment(state.hold.paymentId);
}

function showState(text) {
  $("live").dataset.state = text;
  $("live").textContent = text;
}

async function main() {
  $("showtime").textContent = String(showtimeId);
  $("token-box").hidden = Boolean(state.token);
  $("save-token").addEventListener("click", () => {
    state.token = $("token").value.trim();
    localStorage.setItem("ticketing.token", state.token);
    $("token-box").hidden = true;
    drawPanel();
  });
  $("change-token").addEventListener("click", (e) => { e.preventDefault(); $("token-box").hidden = false; });
  $("hold").addEventListener("click", hold);
  $("checkout").addEventListener("click", checkout);
  $("release").addEventListener("click", release);
  state.paymentUrl = (await api("/pages/config.json")).body.paymentUrl;
  live.start();
  await resume();
  setInterval(tick, 250);
  drawPanel();
}

main();
