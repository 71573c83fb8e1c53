// A showtime's seat map, live (hold-service, docs/seat-map.md): GET .../seats/stream sends a `snapshot` event,
// then one `change` event per seat-map version, in version order. A change that is not the next version
// means one was missed (a gap): the stream is reopened and its snapshot replaces the map. EventSource
// reconnects by itself when the server ends a stream (each reconnect starts with a snapshot); a refusal
// (503 while the server cannot follow the changes) closes it for good, so that case is retried here.
"use strict";

class LiveSeatMap {
  constructor(showtimeId, { onSnapshot, onChange, onState }) {
    this.url = `/showtimes/${showtimeId}/seats/stream`;
    this.handlers = { onSnapshot, onChange, onState };
    this.version = null;
    this.seats = new Map();  // code -> AVAILABLE | HELD | BOOKED, in hall order
    this.places = new Map(); // code -> {category, row, x}: where the seat is drawn (x counts the row's gaps)
    this.prices = {};        // category -> ticket type -> cents
    this.reloads = 0;        // streams reopened after a gap (tests read it)
    this.retryMs = 1000;
  }

  start() {
    const source = new EventSource(this.url);
    this.source = source;
    source.addEventListener("snapshot", (e) => this.snapshot(JSON.parse(e.data)));
    source.addEventListener("change", (e) => this.change(JSON.parse(e.data)));
    source.onopen = () => { this.retryMs = 1000; this.handlers.onState("live"); };
    source.onerror = () => {
      if (source.readyState !== EventSource.CLOSED) {
        this.handlers.onState("reconnecting");
        return;
      }
      this.handlers.onState("offline");
      setTimeout(() => { if (this.source === source) this.start(); }, this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 15000);
    };
  }

  snapshot(map) {
    this.version = map.version;
    this.title = map.title || "";
    this.seats = new Map(map.seats.map((s) => [s.code, s.status]));
    this.places = new Map(map.seats.map((s) => [s.code, { category: s.category || "STANDARD", row: s.row, x: s.x }]));
    this.prices = map.prices || {};
    this.currency = map.currency || this.currency || null;  // ISO 4217 when the API says; the pages' default else
    this.handlers.onSnapshot(this);
  }

  change(change) {
    if (this.version === null || change.version <= this.version) return;  // already in the snapshot
    if (change.version !== this.version + 1) {
      this.reload();
      return;
    }
    for (const seat of change.seats) this.seats.set(seat.code, seat.status);
    this.version = change.version;
    this.handlers.onChange(this, change);
  }

  reload() {
    this.reloads += 1;
    this.version = null;
    this.source.close();
    this.handlers.onState("reloading");
    this.start();
  }
}

// Seats grouped by row (the letters of the code), in the order the map lists them.
function seatRows(seats) {
  const rows = new Map();
  for (const [code, status] of seats) {
    const row = code.replace(/[0-9]+$/, "");
    if (!rows.has(row)) rows.set(row, []);
    rows.get(row).push([code, status]);
  }
  return rows;
}

function showtimeFromPath() {
  const match = location.pathname.match(/\/pages\/showtimes\/([0-9]+)/);
  return match ? Number(match[1]) : null;
}
