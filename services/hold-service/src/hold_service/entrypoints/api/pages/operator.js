// The operator's page of one showtime: AVAILABLE / HELD / BOOKED counts and the map, live from the same
// stream customers get, and the holds, bookings and releases of the last minute, counted from its changes
// (each change of the seat map is one hold taken, booked or released). The counts come from every version in
// order, so they are exact; the per-minute counts start when the page opens. With an operator (admin) token,
// pasted once and kept in this browser, the waiting room's queue length, the customers choosing seats and the
// admissions per minute, as GET /admin/showtimes/{id}/waiting-room gives them every few seconds, and the
// bookings checked in at the doors against those booked (GET /showtimes/{id}/checkins).
"use strict";

const $ = (id) => document.getElementById(id);
const WINDOW_MS = 60000;
const seen = { HELD: [], BOOKED: [], AVAILABLE: [] };  // arrival times of changes, by the status they set
const cells = new Map();
const CELL_STATES = { AVAILABLE: N_("available"), HELD: N_("held"), BOOKED: N_("booked") };

function drawCounts(map) {
  const counts = { AVAILABLE: 0, HELD: 0, BOOKED: 0 };
  for (const status of map.seats.values()) counts[status] += 1;
  for (const [status, count] of Object.entries(counts)) $(`count-${status}`).textContent = String(count);
  $("version").textContent = String(map.version);
}

function drawMap(map) {
  const grid = $("map");
  grid.replaceChildren();
  cells.clear();
  for (const [, seats] of seatRows(map.seats)) {
    const line = Object.assign(document.createElement("div"), { className: "row" });
    for (const [code, status] of seats) {
      const cell = Object.assign(document.createElement("span"), { className: "seat" });
      cell.dataset.code = code;
      describeCell(cell, status);
      cells.set(code, cell);
      line.append(cell);
    }
    grid.append(line);
  }
  drawCounts(map);
  if (map.title) $("showtime").textContent = _("{title} (showtime {showtime})", { title: map.title, showtime: showtimeId });
}

function changed(map, change) {
  seen[change.seats[0].status].push(Date.now());  // a change gives all its seats one status
  for (const { code, status } of change.seats) describeCell(cells.get(code), status);
  drawCounts(map);
  drawRates();
}

function perMinute(times) {
  while (times.length && times[0] < Date.now() - WINDOW_MS) times.shift();
  return times.length;
}

function drawRates() {
  $("holds-per-minute").textContent = String(perMinute(seen.HELD));
  $("bookings-per-minute").textContent = String(perMinute(seen.BOOKED));
  $("releases-per-minute").textContent = String(perMinute(seen.AVAILABLE));
}

function showState(text) {
  $("live").dataset.state = text;
  $("live").textContent = streamStateName(text);
}

// A seat of the small map: its state in words too (an image with a name), not its colour alone.
function describeCell(cell, status) {
  cell.dataset.status = status;
  cell.setAttribute("role", "img");
  cell.setAttribute("aria-label", _("{seat}: {state}", { seat: cell.dataset.code,
                                                        state: status in CELL_STATES ? _(CELL_STATES[status]) : status }));
  cell.title = cell.getAttribute("aria-label");
}

const ROOM_POLL_MS = 3000;
const adminToken = () => Auth.token();  // an operator (admin) signed in, or a pasted token (auth.js)

function showRoom(text, active = "-", rate = "-") {
  $("queue-length").textContent = text;
  $("room-active").textContent = active;
  $("admitted-per-minute").textContent = rate;
}

// "on (opened itself: ARRIVALS)", "off (automatic: opens at 1000 new a minute or 400 active)", "on (forced)".
function roomState(room) {
  const state = room.enabled ? _("on") : _("off");
  if (room.mode !== "auto") return _("{state} (forced by an operator)", { state });
  if (room.enabled && room.changedReason !== "OPERATOR") {
    return _("on (opened itself: {reason})", { reason: room.changedReason });
  }
  return _("{state} (automatic: opens at {arrivals} new a minute or {active} active)", {
    state, arrivals: room.openAtArrivalsPerMinute, active: room.openAtActive });
}

async function drawRoom() {
  if (!adminToken()) return showRoom(Auth.withProvider ? _("sign in as an operator") : _("paste an operator token above"));
  const r = await fetch(`/admin/showtimes/${showtimeId}/waiting-room`,
                        { headers: { authorization: `Bearer ${adminToken()}` } }).catch(() => null);
  const room = r && r.ok ? await r.json() : null;
  if (r && r.status === 401) return showRoom(_("token refused"));
  if (r && r.status === 404) {  // never configured, and never opened itself
    $("room-state").textContent = _("off (not configured)");
    return showRoom(_("waiting room off"));
  }
  if (!room) return showRoom(_("unavailable"));
  $("room-state").textContent = roomState(room);
  if (!room.enabled) return showRoom(_("waiting room off"));
  const figure = (value) => (value === null ? "-" : String(value));
  showRoom(figure(room.queueLength), figure(room.active),
           room.admissionRatePerMinute === null ? "-" : room.admissionRatePerMinute.toFixed(1));
}

async function drawCheckins() {
  if (!adminToken()) return;
  const r = await fetch(`/showtimes/${showtimeId}/checkins`,
                        { headers: { authorization: `Bearer ${adminToken()}` } }).catch(() => null);
  if (!r || !r.ok) return;
  const c = await r.json();
  $("checked-in").textContent = _("{admitted} of {bookings} bookings ({admittedSeats} of {seats} seats)", {
    admitted: c.admittedBookings, bookings: c.bookings, admittedSeats: c.admittedSeats, seats: c.seats });
}

const showtimeId = showtimeFromPath();
$("showtime").textContent = _("Showtime {showtime}", { showtime: showtimeId });
Auth.ready.then(() => { $("token-box").hidden = Boolean(adminToken()) || Auth.withProvider; });
Auth.onChange(() => { drawRoom(); drawCheckins(); });
$("save-token").addEventListener("click", () => {
  Auth.usePasted($("token").value.trim());
  $("token-box").hidden = true;
  drawRoom();
  drawCheckins();
});
new LiveSeatMap(showtimeId, { onSnapshot: drawMap, onChange: changed, onState: showState }).start();
setInterval(drawRates, 1000);
drawRoom();
drawCheckins();
setInterval(() => { drawRoom(); drawCheckins(); }, ROOM_POLL_MS);
