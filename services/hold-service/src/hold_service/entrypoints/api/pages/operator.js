// The operator's page of one showtime: AVAILABLE / HELD / BOOKED counts and the map, live from the same
// stream customers get, and the holds, bookings and releases of the last minute, counted from its changes
// (each change is one hold taken, booked or released: DESIGN.md section 4). The counts come from every
// version in order, so they are exact; the per-minute counts start when the page opens.
"use strict";

const $ = (id) => document.getElementById(id);
const WINDOW_MS = 60000;
const seen = { HELD: [], BOOKED: [], AVAILABLE: [] };  // arrival times of changes, by the status they set
const cells = new Map();

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
      const cell = Object.assign(document.createElement("span"), { className: "seat", title: code });
      cell.dataset.code = code;
      cell.dataset.status = status;
      cells.set(code, cell);
      line.append(cell);
    }
    grid.append(line);
  }
  drawCounts(map);
}

function changed(map, change) {
  seen[change.seats[0].status].push(Date.now());  // a change gives all its seats one status
  for (const { code, status } of change.seats) cells.get(code).dataset.status = status;
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
  $("live").textContent = text;
}

const showtimeId = showtimeFromPath();
$("showtime").textContent = String(showtimeId);
new LiveSeatMap(showtimeId, { onSnapshot: drawMap, onChange: changed, onState: showState }).start();
setInterval(drawRates, 1000);
