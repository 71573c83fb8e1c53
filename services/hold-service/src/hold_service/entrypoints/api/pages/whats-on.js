// What's on: the catalogue (GET /showtimes, public and cached) by day and cinema. Each showtime's start is shown
// as the cinema's clock shows it (its time zone); one on sale links to its seat map.
"use strict";

const STATUS_TEXT = { ON_SALE: "on sale", SOLD_OUT: "sold out", CLOSED: "sales closed", CANCELLED: "cancelled" };
const el = (id) => document.getElementById(id);
const cinemas = new Set();

function days() {  // today and the six days after it, each [from, to) in this browser's day
  const start = new Date();
  start.setHours(0, 0, 0, 0);
  return Array.from({ length: 7 }, (_, i) => {
    const from = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i);
    const to = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i + 1);
    return { from, to, label: from.toLocaleDateString([], { weekday: "long", day: "numeric", month: "long" }) };
  });
}

function localTime(iso, zone) {
  return new Date(iso).toLocaleString([], { timeZone: zone || "UTC", hour: "2-digit", minute: "2-digit", hour12: false,
                                           weekday: "short", day: "numeric", month: "short", timeZoneName: "short" });
}

function line(s) {
  const item = document.createElement("li");
  item.dataset.showtime = String(s.showtimeId);
  item.dataset.status = s.status;
  const title = s.status === "ON_SALE"
    ? Object.assign(document.createElement("a"), { href: `/pages/showtimes/${s.showtimeId}`, textContent: s.title })
    : Object.assign(document.createElement("strong"), { textContent: s.title });
  const where = [s.cinema, s.hall].filter(Boolean).join(", ");
  const length = s.durationMinutes ? `, ${s.durationMinutes} min` : "";
  const seats = s.status === "ON_SALE" ? `, ${s.seatsAvailable} seats left, from ${money(s.fromPriceCents)}` : "";
  item.append(title, ` ${localTime(s.startsAt, s.timeZone)}${where ? ` at ${where}` : ""}${length}: `,
              Object.assign(document.createElement("span"), { className: "status", textContent: STATUS_TEXT[s.status] }),
              seats, s.waitingRoom && s.status === "ON_SALE" ? " (queue)" : "");
  return item;
}

async function show() {
  const day = days()[Number(el("day").value || 0)];
  const params = new URLSearchParams({ from: day.from.toISOString(), to: day.to.toISOString() });
  if (el("cinema").value) params.set("cinema", el("cinema").value);
  const r = await fetch(`/showtimes?${params}`);
  if (r.status !== 200) {
    el("message").textContent = `What's on cannot be shown now (${r.status}).`;
    return;
  }
  const { showtimes } = await r.json();
  for (const s of showtimes) {
    if (s.cinema && !cinemas.has(s.cinema)) {
      cinemas.add(s.cinema);
      el("cinema").append(new Option(s.cinema, s.cinema));
    }
  }
  el("showtimes").replaceChildren(...showtimes.map(line));
  el("message").textContent = showtimes.length ? "" : "Nothing on that day.";
}

function main() {
  days().forEach((d, i) => el("day").append(new Option(d.label, String(i))));
  const asked = new URLSearchParams(location.search);
  if (asked.has("day")) el("day").value = asked.get("day");
  el("day").addEventListener("change", show);
  el("cinema").addEventListener("change", show);
  show();
}

main();
