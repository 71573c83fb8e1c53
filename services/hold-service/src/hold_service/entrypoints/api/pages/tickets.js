// Seat categories, their prices and a ticket type per picked seat (seat-map.js uses these). The prices are the
// showtime's (the seat map carries them); the amount a hold costs is the server's (the hold's answer), never
// computed here.
"use strict";

const CATEGORY_NAMES = { STANDARD: "Standard", VIP: "VIP", ACCESSIBLE: "Wheelchair space", COMPANION: "Companion" };
const TICKET_NAMES = { ADULT: "Adult", CHILD: "Child", SENIOR: "Senior", STUDENT: "Student" };

function money(cents) {
  return new Intl.NumberFormat(undefined, { style: "currency", currency: "EUR" }).format(cents / 100);
}

// The legend: each category the hall has, its colour and its prices by ticket type.
function drawPriceLegend(element, prices) {
  element.replaceChildren();
  for (const [category, byType] of Object.entries(prices)) {
    const item = document.createElement("li");
    item.dataset.category = category;
    const swatch = Object.assign(document.createElement("span"), { className: "seat" });
    swatch.dataset.category = category;
    swatch.dataset.status = "AVAILABLE";
    const text = Object.entries(byType).map(([type, cents]) => `${TICKET_NAMES[type] || type} ${money(cents)}`);
    item.append(swatch, ` ${CATEGORY_NAMES[category] || category}: ${text.join(", ")}`);
    element.append(item);
  }
}

// One line per picked seat: its category and a choice of the ticket types priced for that category.
function drawTicketChoices(element, picked, places, prices, types, onChange) {
  element.replaceChildren();
  for (const code of picked) {
    const category = (places.get(code) || {}).category || "STANDARD";
    const priced = prices[category] || { ADULT: 0 };
    if (!(types.get(code) in priced)) types.set(code, "ADULT" in priced ? "ADULT" : Object.keys(priced)[0]);
    const select = document.createElement("select");
    select.dataset.seat = code;
    select.setAttribute("aria-label", `ticket type for ${code}`);
    for (const [type, cents] of Object.entries(priced)) {
      select.append(new Option(`${TICKET_NAMES[type] || type} (${money(cents)})`, type, false, type === types.get(code)));
    }
    select.addEventListener("change", () => { types.set(code, select.value); onChange(); });
    const line = Object.assign(document.createElement("li"), { className: "ticket-choice" });
    line.append(`${code} (${CATEGORY_NAMES[category] || category}) `, select);
    element.append(line);
  }
}

// The tickets of a hold as the server priced them.
function ticketsText(tickets) {
  return (tickets || []).map((t) => `${t.seat} ${TICKET_NAMES[t.ticketType] || t.ticketType} ${money(t.priceCents)}`)
    .join(", ");
}
