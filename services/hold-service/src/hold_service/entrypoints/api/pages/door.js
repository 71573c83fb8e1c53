// The door scanner (for staff): the showtime and the door, then each ticket scanned (camera, hand scanner or
// pasted text) is checked by the server (POST /checkins) and answered in large green (admitted, with the seats)
// or red (refused, with the reason: where and when it was already admitted, revoked, another showtime, too
// early, not a ticket). When the network is gone the page checks the signature itself with the keys it fetched
// beforehand, refuses a second scan of a booking this device admitted, and queues the scan with its time; back
// online it sends the queue (POST /checkins/batch) and lists what the server refused (admitted elsewhere
// first, revoked), in parts. The counter is the showtime's admitted bookings against its booked ones (the
// server's, every door's), with the scans still queued here beside it. The staff token is pasted once and kept
// in this browser, like the other pages' tokens. A service worker keeps the page itself, so a scanner opened or
// reloaded without the network still scans (door-sw.js).
"use strict";

const $ = (id) => document.getElementById(id);
const POLL_MS = 5000;  // the counter refreshed, and a queue the server did not take sent again
const memory = new DoorMemory();
const state = { counts: null, syncing: false };  // the staff member's token: Auth.token() (auth.js)

const showtimeId = () => Number($("showtime").value) || null;
const door = () => $("door").value.trim();
const clock = (iso) => new Date(iso).toLocaleTimeString(i18n.locale, { hour: "2-digit", minute: "2-digit",
                                                                        second: "2-digit", hour12: false });
const seatsText = (seats, tickets) => (tickets?.length
  ? tickets.map((t) => `${t.seat} ${ticketName(t.ticketType)}`).join(", ") : seats.join(", "));

function refusal(error, body = {}) {
  switch (error) {
    case "ALREADY_CHECKED_IN": return _("Already checked in at door {door} at {time}", { door: body.door,
                                                                                        time: clock(body.at) });
    case "TICKET_REVOKED": return _("Revoked: this booking was cancelled or refunded");
    case "WRONG_SHOWTIME": return _("Wrong showtime: this ticket is for another showtime");
    case "TOO_EARLY": return _("Too early: check-in for this showtime has not opened yet");
    case "CHECKIN_CLOSED": return _("The showtime has ended");
    case "TICKET_INVALID": return _("Not a valid ticket: {reason}", { reason: body.message
                                                                      || _("forged, damaged or altered") });
    default: return body.message || _("Refused ({error})", { error });
  }
}

function answer(outcome, verdict, detail) {
  $("answer").dataset.outcome = outcome;
  $("verdict").textContent = verdict;
  $("detail").textContent = detail;
}

async function api(url, options = {}) {
  const r = await fetch(url, { ...options, headers: { authorization: `Bearer ${Auth.token()}`,
                                                      "content-type": "application/json" } });
  return { status: r.status, body: r.headers.get("content-type")?.includes("json") ? await r.json() : {} };
}

function askForToken(text) {
  $("token-box").hidden = Auth.withProvider;  // with the chain's sign-in: its button in the header
  answer("refused", "Sign in", Auth.withProvider ? "Sign in as door staff." : text);
}

async function check(text) {
  if (!text || !showtimeId() || !door()) return answer("idle", _("Ready"), _("Choose the showtime and the door first."));
  if (!navigator.onLine) return checkOffline(text);
  let r;
  try {
    r = await api("/checkins", { method: "POST", body: JSON.stringify({ ticket: text, showtimeId: showtimeId(),
                                                                        door: door() }) });
  } catch {
    return checkOffline(text);  // the network went before the browser noticed
  }
  if (r.status === 401) return askForToken("Your staff token was refused: paste a new one.");
  if (r.status >= 500) return checkOffline(text);  // the server cannot decide now: the door must not stop
  showNetwork(true);
  if (r.status !== 200) return answer("refused", _("Refused"), refusal(r.body.error, r.body));
  memory.remember(showtimeId(), r.body.bookingId, new Date().toISOString(), door());
  answer("admitted", _("Admitted: {count} seat(s)", { count: r.body.seats.length }),
         seatsText(r.body.seats, r.body.tickets));
  return drawCounts();
}

async function checkOffline(text) {
  showNetwork(false);
  const { payload, reason } = await memory.verify(text);
  const offline = _("Refused (offline)");
  if (!payload) return answer("refused", offline, _("Not a valid ticket: {reason}", { reason }));
  if (payload.s !== showtimeId()) return answer("refused", offline, refusal("WRONG_SHOWTIME"));
  const before = memory.admitted(showtimeId())[payload.b];
  if (before) {
    return answer("refused", offline, refusal("ALREADY_CHECKED_IN", before) + " (" + _("this scanner") + ")");
  }
  const at = new Date().toISOString();
  memory.remember(showtimeId(), payload.b, at, door());
  memory.enqueue({ ticket: text.trim(), showtimeId: showtimeId(), door: door(), at, bookingId: payload.b,
                   seats: payload.seats });
  answer("admitted", _("Admitted offline: {count} seat(s)", { count: payload.seats.length }),
         payload.seats.join(", ") + " (" + _("signature checked here; sent to the server when the network is back")
           + ")");
  return drawQueue();
}

function drawQueue() {
  const queued = memory.queue();
  $("queued").textContent = String(queued.length);
  $("sync").hidden = queued.length === 0 && $("conflicts").children.length === 0;
  drawCounter();
}

function conflictLine(scan, result) {
  const item = document.createElement("li");
  item.dataset.booking = scan.bookingId;
  item.dataset.error = result.error;
  const scanned = _("Seats {seats}, admitted here offline at {time} (door {door}):", {
    seats: scan.seats.join(", "), time: clock(scan.at), door: scan.door });
  item.textContent = `${scanned} ${refusal(result.error, result)}.`;
  return item;
}

async function sync() {
  if (!memory.queue().length || !Auth.token() || state.syncing) return;
  state.syncing = true;
  try {
    const totals = { sent: 0, refused: 0 };
    while (memory.queue().length && await sendPart(totals));
    if (totals.sent) {
      const figures = { sent: totals.sent, admitted: totals.sent - totals.refused, refused: totals.refused };
      $("sync-state").textContent = totals.refused
        ? _("Sent {sent} scan(s): {admitted} admitted, {refused} refused by the server (below).", figures)
        : _("Sent {sent} scan(s): {admitted} admitted, {refused} refused by the server.", figures);
    }
  } finally {
    state.syncing = false;
  }
  drawQueue();
  await drawCounts();
}

// One part of the queue to the server; whether it took it.
async function sendPart(totals) {
  $("sync-state").textContent = _("Sending...");
  const sent = await memory.sync(Auth.token());
  if (sent === null) {
    showNetwork(false);
    return false;
  }
  if (sent.status === 401) {
    askForToken("Your staff token was refused: paste a new one to send the queue.");
    return false;
  }
  if (sent.status) {
    $("sync-state").textContent = _("The server did not take them ({status}); trying again.", { status: sent.status });
    return false;
  }
  showNetwork(true);
  const refused = sent.results.filter(([, result]) => !result.admitted);  // a scan sent twice is admitted twice
  for (const [scan, result] of refused) {
    if (result.error !== "ALREADY_CHECKED_IN") memory.forget(scan.showtimeId, scan.bookingId);
    $("conflicts").append(conflictLine(scan, result));
  }
  totals.sent += sent.results.length;
  totals.refused += refused.length;
  return true;
}

// The server's figures (as last fetched), and beside them the scans this device holds until it can send them.
function drawCounter() {
  const pending = memory.queue().filter((s) => s.showtimeId === showtimeId());
  const c = state.counts;
  const figure = (value) => (c ? String(value) : "-");
  $("admitted").textContent = figure(c?.admittedBookings);
  $("expected").textContent = figure(c?.bookings);
  $("admitted-seats").textContent = figure(c?.admittedSeats);
  $("expected-seats").textContent = figure(c?.seats);
  $("pending").hidden = !pending.length;
  $("pending").textContent = _("+ {count} admitted offline, not sent yet", { count: pending.length });
}

async function drawCounts() {
  if (!showtimeId() || !Auth.token() || !navigator.onLine) return drawCounter();
  const r = await api(`/showtimes/${showtimeId()}/checkins`).catch(() => null);
  if (r && r.status === 200) state.counts = r.body;
  if (r && r.status < 500) showNetwork(true);
  return drawCounter();
}

function showNetwork(answered) {
  const online = answered && navigator.onLine;  // an answer that arrives after the network went does not bring it back
  document.body.dataset.network = online ? "online" : "offline";
  $("network").dataset.state = online ? "live" : "offline";
  $("network").textContent = online ? _("online") : _("offline: checking signatures here");
}

async function loadKeys() {
  try {
    const keys = await memory.refreshKeys();
    $("keys").textContent = _("{count} ticket key(s) kept for offline use", { count: Object.keys(keys).length });
  } catch {
    const kept = Object.keys(memory.keys()).length;
    $("keys").textContent = kept ? _("{count} ticket key(s) kept from before", { count: kept })
      : _("no ticket keys yet: offline checks refuse");
  }
}

// The cinema's showtimes only, once it is chosen (kept for the next visit; `?cinema=` in the address chooses it):
// a chain's window is thousands of showtimes, a door's a few dozen. Its options are the cinemas seen so far.
function addCinemas(names) {
  const known = new Set([...$("cinema").options].map((o) => o.value));
  for (const name of names) {
    if (name && !known.has(name)) {
      known.add(name);
      $("cinema").append(new Option(name, name));
    }
  }
}

async function loadShowtimes() {
  const now = new Date();
  const from = new Date(now.getTime() - 6 * 3600e3).toISOString().slice(0, 16) + ":00Z";  // late-comers
  const to = new Date(now.getTime() + 2 * 86400e3).toISOString().slice(0, 16) + ":00Z";
  const params = new URLSearchParams({ from, to });
  if ($("cinema").value) params.set("cinema", $("cinema").value);
  const read = await allShowtimes(params);
  const listed = read || JSON.parse(localStorage.getItem("ticketing.door.showtimes") || "[]");
  if (read) localStorage.setItem("ticketing.door.showtimes", JSON.stringify(listed));
  addCinemas(listed.map((s) => s.cinema));
  const wanted = Number(new URLSearchParams(location.search).get("showtime") || localStorage.getItem(
    "ticketing.door.showtime"));
  const options = listed.map((s) => new Option(
    `${clock(s.startsAt).slice(0, 5)} ${s.title}${s.hall ? `, ${s.hall}` : ""} (${s.showtimeId})`, s.showtimeId));
  if (wanted && !listed.some((s) => s.showtimeId === wanted)) {
    options.push(new Option(_("Showtime {showtime}", { showtime: wanted }), wanted));
  }
  $("showtime").replaceChildren(new Option(_("Choose the showtime"), ""), ...options);
  if (wanted) $("showtime").value = String(wanted);
}

function choose() {
  localStorage.setItem("ticketing.door.showtime", $("showtime").value);
  localStorage.setItem("ticketing.door.door", door());
  state.counts = null;
  drawCounts();
}

async function main() {
  // The page kept in this browser (door-sw.js), so that the scanner opens again without the network.
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/pages/door-sw.js", { scope: "/pages/door" })
    .catch(() => {});
  await Auth.ready;
  $("token-box").hidden = Boolean(Auth.token()) || Auth.withProvider;
  if (!Auth.token() && Auth.withProvider) askForToken("");
  Auth.onChange(() => { drawCounts(); sync(); });
  $("save-token").addEventListener("click", () => {
    Auth.usePasted($("token").value.trim());
    $("token-box").hidden = true;
    answer("idle", "Ready", "Scan a ticket.");
    drawCounts();
    sync();
  });
  $("door").value = new URLSearchParams(location.search).get("door") || localStorage.getItem("ticketing.door.door")
    || "A";
  const cinema = new URLSearchParams(location.search).get("cinema") ?? localStorage.getItem("ticketing.door.cinema");
  addCinemas([cinema]);
  $("cinema").value = cinema || "";
  $("cinema").addEventListener("change", async () => {
    localStorage.setItem("ticketing.door.cinema", $("cinema").value);
    await loadShowtimes();
    choose();
  });
  $("showtime").addEventListener("change", choose);
  $("door").addEventListener("change", choose);
  $("scan-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("scan").value.trim();
    $("scan").value = "";
    await check(text);
    $("scan").focus();
  });
  window.addEventListener("online", () => { showNetwork(true); sync(); drawCounts(); loadKeys(); });
  window.addEventListener("offline", () => showNetwork(false));
  showNetwork(navigator.onLine);
  await new DoorCamera($("viewfinder"), $("camera"), (text) => check(text)).init();
  await Promise.all([loadKeys(), loadShowtimes()]);
  choose();
  drawQueue();
  sync();
  setInterval(() => { drawCounts(); sync(); }, POLL_MS);
}

main();
