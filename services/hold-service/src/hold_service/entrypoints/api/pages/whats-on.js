// What's on: the catalogue (GET /showtimes, public and cached) by day and cinema. Each showtime's start is shown
// as the cinema's clock shows it (its time zone); one on sale links to its seat map.
"use strict";

const STATUS_TEXT = { ON_SALE: N_("on sale"), SOLD_OUT: N_("sold out"), CLOSED: N_("sales closed"),
                      CANCELLED: N_("cancelled") };
const el = (id) => document.getElementById(id);
const cinemas = new Set();

function days() {  // today and the six days after it, each [from, to) in this browser's day
  const start = new Date();
  start.setHours(0, 0, 0, 0);
  return Array.from({ length: 7 }, (_, i) => {
    const from = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i);
    const to = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i + 1);
    return { from, to, label: from.toLocaleDateString(i18n.locale, { weekday: "long", day: "numeric", month: "long" }) };
  });
}

function localTime(iso, zone) {
  return localeTime(iso, { timeZone: zone || "UTC", hour: "2-digit", minute: "2-digit", hour12: false,
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
  const length = s.durationMinutes ? ", " + _("{minutes} min", { minutes: s.durationMinutes }) : "";
  const seats = s.status === "ON_SALE" ? ", " + _("{count} seats left, from {price}", {
    count: s.seatsAvailable, price: money(s.fromPriceCents, s.currency) }) : "";
  const at = where ? " " + _("at {place}", { place: where }) : "";
  item.append(title, ` ${localTime(s.startsAt, s.timeZone)}${at}${length}: `,
              Object.assign(document.createElement("span"), { className: "status", textContent: _(STATUS_TEXT[s.status]) }),
              seats, s.waitingRoom && s.status === "ON_SALE" ? " (" + _("queue") + ")" : "");
  return item;
}

async function show() {
  const day = days()[Number(el("day").value || 0)];
  const params = new URLSearchParams({ from: day.from.toISOString(), to: day.to.toISOString() });
  if (el("cinema").value) params.set("cinema", el("cinema").value);
  const failed = {};
  const showtimes = await allShowtimes(params, failed);
  if (!showtimes) {
    el("message").textContent = _("What's on cannot be shown now ({status}).", { status: failed.status });
    return;
  }
  for (const s of showtimes) {
    if (s.cinema && !cinemas.has(s.cinema)) {
      cinemas.add(s.cinema);
      el("cinema").append(new Option(s.cinema, s.cinema));
    }
  }
  el("showtimes").replaceChildren(...showtimes.map(line));
  el("message").textContent = showtimes.length ? "" : _("Nothing on that day.");
}

function main() {
  drawDays();
  const asked = new URLSearchParams(location.search);
  if (asked.has("day")) el("day").value = asked.get("day");
  if (asked.get("cinema")) {  // a link to one cinema's programme (?day=1&cinema=...)
    const cinema = asked.get("cinema");
    cinemas.add(cinema);
    el("cinema").append(new Option(cinema, cinema));
    el("cinema").value = cinema;
  }
  el("day").addEventListener("change", show);
  el("cinema").addEventListener("change", show);
  document.addEventListener("localechange", () => {
    const chosen = el("day").value;
    drawDays();
    el("day").value = chosen;
    show();
  });
  show();
}

function drawDays() {
  el("day").replaceChildren(...days().map((d, i) => new Option(d.label, String(i))));
}

main();
