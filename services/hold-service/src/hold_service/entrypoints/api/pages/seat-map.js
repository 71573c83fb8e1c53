// The customer's page: the film and its start, the waiting room when the showtime has one on (waiting-room.js),
// then the live seat map: pick up to 8 seats (or ask for the best N seats of a category side by side: best
// available), hold them (with the room's admission token), a countdown to the
// hold's expiry, checkout on the gateway's hosted page (payment-service's POST /holds/{id}/checkout gives its
// URL), the result. Looking needs no account: the film, the seat map and its prices are shown to anyone; Hold
// asks for the sign-in (auth.js) and the customer comes back from it to the seats he had picked.
"use strict";

const MAX_SEATS = 8;
const showtimeId = showtimeFromPath();
const $ = (id) => document.getElementById(id);
const seatButtons = new Map();
const state = {
  picked: new Set(),
  types: new Map(),  // picked seat -> its ticket type (tickets.js)
  hold: JSON.parse(localStorage.getItem(`ticketing.hold.${showtimeId}`) || "null"),
  paymentUrl: "",
  admission: null,  // {admissionToken, expiresAt} once the waiting room let this customer in
  entering: false,  // asking the waiting room, queueing or waiting in it
  signedInMeanwhile: false,  // a token given while entering (enter)
  mapStarted: false,
};
const live = new LiveSeatMap(showtimeId, { onSnapshot: drawMap, onChange: changed, onState: showState });
const room = new WaitingRoom(showtimeId, api, { onQueued: queued, onAdmitted: admitted, onSoldOut: soldOut,
  onSignIn: turnToSignIn,
                                                onOpen: admitted });

function uid() {  // crypto.randomUUID needs a secure context; http://<host> of a dev machine is not one
  return crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

async function api(url, { method = "GET", body, headers = {} } = {}, renewed = false) {
  const all = { ...headers, ...(body ? { "content-type": "application/json" } : {}) };
  const token = Auth.token();
  if (token) all.authorization = `Bearer ${token}`;
  const response = await fetch(url, { method, headers: all, body: body ? JSON.stringify(body) : undefined });
  if (response.status === 401 && token && !renewed && await Auth.renew()) {  // a lapsed session, renewed once
    return api(url, { method, body, headers }, true);
  }
  const json = response.status === 204 ? null : await response.json().catch(() => null);
  return { status: response.status, body: json, headers: response.headers,
           date: Date.parse(response.headers.get("date")) };
}

// The countdown runs on the server's clock: its Date header against ours. The header is whole seconds and
// may be up to a second old, so the server's time is taken as the middle of that range.
function clockOffset(date) {
  return Number.isNaN(date) ? 0 : date + 1000 - Date.now();
}

function say(text) { $("message").textContent = text; }  // a live region: screen readers announce it

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
  const width = Math.max(0, ...[...map.places.values()].map((p) => p.x || 0));  // the widest row's places
  for (const [row, seats] of seatRows(map.seats)) {
    const line = document.createElement("div");
    line.className = "row";
    if (width) line.style.gridTemplateColumns = `repeat(${width + 1}, 2rem)`;  // every row as wide: aligned
    line.append(Object.assign(document.createElement("span"), { className: "row-name", textContent: row }));
    for (const [code] of seats) {
      const button = Object.assign(document.createElement("button"), { type: "button", className: "seat" });
      const place = map.places.get(code);
      button.dataset.code = code;
      button.dataset.category = place ? place.category : "STANDARD";
      if (place && place.x) button.style.gridColumn = String(place.x + 1);  // the row's gaps stay empty
      button.textContent = code.slice(row.length);
      button.addEventListener("click", () => pick(code));
      seatButtons.set(code, button);
      line.append(button);
    }
    grid.append(line);
  }
  for (const code of map.seats.keys()) drawSeat(code);
  drawPriceLegend($("prices"), map.prices, map.currency);
  drawPanel();
}

function changed(map, change) {
  for (const { code, status } of change.seats) {
    if (status !== "AVAILABLE" && state.picked.delete(code) && !mine(code)) say(_("{seat} was just taken.", { seat: code }));
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
  describeSeat(button, status);
}

function redraw() {  // the page's language changed (i18n.js): every text drawn again
  if (live.version !== null) drawMap(live);
  drawPanel();
  showState($("live").dataset.state);
}

function pick(code) {
  if (state.picked.has(code)) {
    state.picked.delete(code);
    state.types.delete(code);
  }
  else if (state.picked.size >= MAX_SEATS) return say(_("At most {count} seats at once.", { count: MAX_SEATS }));
  else state.picked.add(code);
  drawSeat(code);
  drawPanel();
}

function drawPanel() {
  const held = state.hold && state.hold.status === "HELD";
  const picked = [...state.picked];
  $("picked").textContent = picked.length ? _("Picked: {seats}", { seats: picked.join(", ") })
    : _("Pick up to {count} seats.", { count: MAX_SEATS });
  drawTicketChoices($("ticket-types"), held ? [] : picked, live.places, live.prices, state.types, drawPanel,
                    live.currency);
  $("hold").disabled = held || picked.length === 0;  // not signed in yet: Hold asks for it
  drawCategories();
  $("hold-best").disabled = held || !$("best-category").options.length;
  $("my-hold").hidden = !held;
  if (held) {
    $("my-seats").textContent = state.hold.seats.join(", ");
    $("amount").textContent = money(state.hold.amountCents, state.hold.currency || live.currency);
    $("my-tickets").textContent = ticketsText(state.hold.tickets, state.hold.currency || live.currency);
  }
  $("customer").textContent = Auth.who() ?? _("nobody (not signed in)");
}

function drawCategories() {  // the categories the hall sells, once its prices are known
  const select = $("best-category");
  const categories = Object.keys(live.prices || {});
  if (select.options.length === categories.length) return;
  select.replaceChildren(...categories.map((c) => new Option(categoryName(c), c)));
}

function hold() {
  const seats = [...state.picked].map((code) => ({ code, ticketType: state.types.get(code) || "ADULT" }));
  return askHold({ seats });
}

function holdBest() {  // best available: the platform chooses the seats, side by side in one row
  return askHold({ best: { count: Number($("best-count").value), category: $("best-category").value } });
}

// Not signed in: off to the sign-in, and back to these seats (their ticket types too) after it.
async function signInFirst() {
  if (Auth.token()) return false;
  const picked = { showtimeId, picked: [...state.picked], types: [...state.types] };
  if (!await Auth.signIn(picked)) {
    say("Sign in first: paste your token.");
    $("token-box").hidden = false;
  }
  return true;
}

function backFromSignIn(returned) {
  if (!returned || returned.showtimeId !== showtimeId) return;
  if (returned.ticket) room.keep(returned.ticket);  // admitted before the sign-in: his token claims it
  for (const code of returned.picked || []) state.picked.add(code);
  for (const [code, type] of returned.types || []) state.types.set(code, type);
  say("You are signed in: your seats are still picked. Hold them.");
}

async function askHold(body) {
  if (await signInFirst()) return;
  $("hold").disabled = true;
  $("hold-best").disabled = true;
  const headers = { "idempotency-key": uid() };
  if (state.admission) headers["x-admission-token"] = state.admission.admissionToken;
  const r = await api(`/showtimes/${showtimeId}/holds`, { method: "POST", body, headers });
  if (r.status === 201) {
    state.picked.clear();
    state.types.clear();
    saveHold({ ...r.body, status: "HELD", attempt: 0, offsetMs: clockOffset(r.date) });
    announceHold(state.hold);
  } else if (r.status === 409 && r.body && r.body.together === false) {
    say(_("No {count} {category} seats side by side are free: try fewer seats or another category.",
          { count: body.best.count, category: categoryName(body.best.category) }));
  } else if (r.status === 409 && r.body && r.body.error === "LONE_SEAT") {
    const instead = r.body.suggested || [];
    say(_("That would leave seat {seats} alone.", { seats: r.body.seats.join(", ") })
        + (instead.length ? " " + _("Try {seats}.", { seats: instead.join(", ") }) : ""));
  } else if (r.status === 409 && r.body && r.body.seats) {
    say(_("Taken meanwhile: {seats}.", { seats: r.body.seats.join(", ") }));
  } else if (r.status === 403 && r.body && r.body.error === "ADMISSION_REQUIRED") {
    state.admission = null;  // no token yet, or it lapsed, or the turn ended: (back) to the queue
    say("");
    room.join();
  } else if (r.status === 401) {
    signInAgain();
  } else {
    say((r.body && r.body.message) || _("The hold failed ({status}).", { status: r.status }));
  }
  drawPanel();
}

function stage(name) {  // entering | queue | map | sold-out
  document.body.dataset.stage = name;
  $("waiting-room").hidden = name !== "queue";
  $("sold-out").hidden = name !== "sold-out";
}

function queued(s) {
  stage("queue");
  $("queue-position").textContent = s.position === null || s.position === undefined ? "-" : String(s.position);
  $("queue-wait").textContent = waitText(s.estimatedWaitSeconds);
  $("queue-note").textContent = s.retrying ? _("The queue is busy; trying again in a moment.")
    : s.opensAt && s.position === null ? _("The queue opens at {time}; places are drawn then.", { time: when(s.opensAt) })
      : "";
}

function admitted(admission) {  // null: no waiting room (or it was turned off)
  state.admission = admission;
  stage("map");
  if (admission) {
    say(_("It is your turn: choose your seats and hold them before {time}.", { time: when(admission.expiresAt) }));
  }
  if (!state.mapStarted) {
    state.mapStarted = true;
    live.start();
  }
}

function soldOut(message) {
  stage("sold-out");
  if (message) $("sold-out-text").textContent = message;
}

function when(iso, zone) {  // the cinema's clock when its time zone is known
  return localeTime(iso, { dateStyle: "full", timeStyle: "short", timeZone: zone || undefined });
}

async function showShowtime() {  // the film and its start, from the (public, cached) seat map
  const r = await api(`/showtimes/${showtimeId}/seats`);
  if (r.status !== 200) {
    $("title").textContent = r.status === 404 ? _("No such showtime") : _("The showtime cannot be shown now");
    return false;
  }
  $("title").textContent = r.body.title;
  $("starts-at").textContent = r.body.startsAt ? when(r.body.startsAt, r.body.timeZone) : "";
  if (r.body.cinema) $("starts-at").textContent += `, ${[r.body.cinema, r.body.hall].filter(Boolean).join(", ")}`;
  document.title = _("{title}: pick your seats", { title: r.body.title });
  live.currency = r.body.currency || live.currency;
  return true;
}

function signInAgain() {
  say(Auth.withProvider ? "Your sign-in has lapsed: sign in again." : "Your token was refused: paste a new one.");
  if (!Auth.withProvider) $("token-box").hidden = false;
}

async function enter() {  // through the waiting room, if the showtime has one on (no account needed to queue)
  if (Auth.token() && room.pending()) return room.claim();  // admitted as a visitor, signed in since
  // Already on the way in (a visitor who signs in meanwhile): the calls carry his token from now on, and the
  // place he queued for is claimed by it at his turn (turnToSignIn). A look that found no room is asked again
  // with the token: a customer's look is an arrival at the showtime (its automatic room counts him).
  if (state.entering || room.busy()) {
    state.signedInMeanwhile = Boolean(Auth.token());
    return;
  }
  state.entering = true;
  try {
    do {
      state.signedInMeanwhile = false;
      if (await room.enter() === 401) signInAgain();
    } while (state.signedInMeanwhile && document.body.dataset.stage === "map" && !state.admission);
  } finally {
    state.entering = false;
  }
}

// A visitor's turn came: he signs in (the ticket and his picked seats go through the provider and back), or on
// the dev path pastes his token; his token then claims the turn (enter). Signed in while the poll that brought
// his turn was on its way: his token claims it at once.
async function turnToSignIn(ticket) {
  if (Auth.token()) return room.claim();
  stage("queue");
  $("queue-note").textContent = _("It is your turn: sign in to choose your seats.");
  say(_("It is your turn: sign in to choose your seats."));
  const picked = { showtimeId, ticket, picked: [...state.picked], types: [...state.types] };
  if (!await Auth.signIn(picked) && !Auth.token()) {
    say(_("It is your turn: paste your token to choose your seats."));
    $("token-box").hidden = false;
  }
}

function tick() {
  if (!state.hold || state.hold.status !== "HELD") return;
  const left = Date.parse(state.hold.expiresAt) - (Date.now() + state.hold.offsetMs);
  const seconds = Math.max(0, Math.ceil(left / 1000));
  $("countdown").textContent = `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
  warnExpiry(state.hold, seconds);
  if (left <= 0 && !state.hold.paymentId) {
    say(_("Your hold expired: the seats are free again for everyone."));
    saveHold(null);
  }
}

function showState(text) {
  $("live").dataset.state = text;
  $("live").textContent = streamStateName(text);
}

async function main() {
  $("save-token").addEventListener("click", () => {
    Auth.usePasted($("token").value.trim());
    $("token-box").hidden = true;
    drawPanel();
    enter();
  });
  $("change-token").addEventListener("click", (e) => { e.preventDefault(); $("token-box").hidden = false; });
  Auth.onChange(drawPanel);
  backFromSignIn(await Auth.ready);
  $("token-box").hidden = Boolean(Auth.token()) || Auth.withProvider;  // the dev path: its box, as before
  $("change-token").hidden = Auth.withProvider;  // with the provider: the header's Sign out
  $("hold").addEventListener("click", hold);
  $("hold-best").addEventListener("click", holdBest);
  $("checkout").addEventListener("click", checkout);
  $("release").addEventListener("click", release);
  keyboardSeats($("map"));
  document.addEventListener("localechange", redraw);
  state.paymentUrl = (await api("/pages/config.json")).body.paymentUrl;
  if (!await showShowtime()) return;
  setInterval(tick, 250);
  if (!Auth.token() || !await resume()) await enter();
  drawPanel();
}

main();
