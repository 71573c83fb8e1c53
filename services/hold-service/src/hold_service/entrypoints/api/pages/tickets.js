// Seat categories, their prices and a ticket type per picked seat (seat-map.js uses these). The prices are the
// showtime's (the seat map carries them, in its currency); the amount a hold costs is the server's (the hold's
// answer), never computed here. Names are in the page's language (i18n.js).
"use strict";

const CATEGORY_NAMES = { STANDARD: N_("Standard"), VIP: N_("VIP"), ACCESSIBLE: N_("Wheelchair space"),
                         COMPANION: N_("Companion") };
const TICKET_NAMES = { ADULT: N_("Adult"), CHILD: N_("Child"), SENIOR: N_("Senior"), STUDENT: N_("Student") };

function categoryName(category) { return category in CATEGORY_NAMES ? _(CATEGORY_NAMES[category]) : category; }
function ticketName(type) { return type in TICKET_NAMES ? _(TICKET_NAMES[type]) : type; }

// The legend: each category the hall has, its colour and its prices by ticket type.
function drawPriceLegend(element, prices, currency) {
  element.replaceChildren();
  for (const [category, byType] of Object.entries(prices)) {
    const item = document.createElement("li");
    item.dataset.category = category;
    const swatch = Object.assign(document.createElement("span"), { className: "seat" });
    swatch.dataset.category = category;
    swatch.dataset.status = "AVAILABLE";
    swatch.setAttribute("aria-hidden", "true");
    const text = Object.entries(byType).map(([type, cents]) => `${ticketName(type)} ${money(cents, currency)}`);
    item.append(swatch, ` ${categoryName(category)}: ${text.join(", ")}`);
    element.append(item);
  }
}

// One line per picked seat: its category and a choice of the ticket types priced for that category.
function drawTicketChoices(element, picked, places, prices, types, onChange, currency) {
  element.replaceChildren();
  for (const code of picked) {
    const category = (places.get(code) || {}).category || "STANDARD";
    const priced = prices[category] || { ADULT: 0 };
    if (!(types.get(code) in priced)) types.set(code, "ADULT" in priced ? "ADULT" : Object.keys(priced)[0]);
    const select = document.createElement("select");
    select.dataset.seat = code;
    select.setAttribute("aria-label", _("Ticket type for seat {seat}", { seat: code }));
    for (const [type, cents] of Object.entries(priced)) {
      select.append(new Option(`${ticketName(type)} (${money(cents, currency)})`, type, false, type === types.get(code)));
    }
    select.addEventListener("change", () => { types.set(code, select.value); onChange(); });
    const line = Object.assign(document.createElement("li"), { className: "ticket-choice" });
    line.append(`${code} (${categoryName(category)}) `, select);
    element.append(line);
  }
}

// The tickets of a hold as the server priced them.
function ticketsText(tickets, currency) {
  return (tickets || []).map((t) => `${t.seat} ${ticketName(t.ticketType)} ${money(t.priceCents, currency)}`)
    .join(", ");
}
