// The seat map for assistive technology and the keyboard (seat-map.js calls these). Each seat is a button whose
// accessible name says its seat, category and state ("A4, VIP, available"), with aria-pressed while picked: never
// a colour alone. The map is one tab stop (roving tabindex): the arrow keys move between the seats one can pick
// (left/right in the row, up/down to the nearest seat of the next row), Home/End to the row's ends, Enter or
// Space picks. The hold, its expiry and the room's admission are said in the page's live region (#message).
"use strict";

const SEAT_STATES = { AVAILABLE: N_("available"), HELD: N_("held by someone else"), BOOKED: N_("booked"),
                      MINE: N_("held for you") };
const STREAM_STATES = { connecting: N_("connecting"), live: N_("live"), reconnecting: N_("reconnecting"),
                        offline: N_("offline"), reloading: N_("reloading") };
const EXPIRY_WARNINGS = [60, 10];  // seconds left when the live region warns

function describeSeat(button, status) {
  const state = button.dataset.mine === "true" ? SEAT_STATES.MINE : SEAT_STATES[status] || status;
  const label = _("{seat}, {category}, {state}", { seat: button.dataset.code,
                                                   category: categoryName(button.dataset.category), state: _(state) });
  button.setAttribute("aria-label", label);
  button.setAttribute("aria-pressed", String(button.dataset.picked === "true"));
  button.title = label;
}

function streamStateName(state) { return state in STREAM_STATES ? _(STREAM_STATES[state]) : state; }

function announceHold(hold) {
  const minutes = Math.max(1, Math.round((Date.parse(hold.expiresAt) - (Date.now() + hold.offsetMs)) / 60000));
  say(_("Held for you: {seats}. Pay within {minutes} min or the seats go back on sale.",
        { seats: hold.seats.join(", "), minutes }));
}

function warnExpiry(hold, seconds) {
  const due = EXPIRY_WARNINGS.find((limit) => seconds <= limit && !(hold.warned || []).includes(limit));
  if (due === undefined || seconds === 0 || hold.paymentId) return;
  hold.warned = [...(hold.warned || []), ...EXPIRY_WARNINGS.filter((limit) => limit >= due)];
  say(_("Your hold expires in {seconds} s.", { seconds }));
}

// The seats one can reach with the keyboard: enabled ones, in rows (the map's row elements).
function seatGrid(map) {
  return [...map.querySelectorAll(".row")].map((row) => [...row.querySelectorAll("button.seat:not(:disabled)")])
    .filter((row) => row.length);
}

function nextSeat(grid, current, key) {
  const r = grid.findIndex((row) => row.includes(current));
  if (r < 0) return grid.length ? grid[0][0] : null;
  const c = grid[r].indexOf(current);
  const nearest = (row) => row.reduce((best, seat) => (Math.abs(seat.offsetLeft - current.offsetLeft)
    < Math.abs(best.offsetLeft - current.offsetLeft) ? seat : best));
  switch (key) {
    case "ArrowLeft": return grid[r][Math.max(0, c - 1)];
    case "ArrowRight": return grid[r][Math.min(grid[r].length - 1, c + 1)];
    case "ArrowUp": return r > 0 ? nearest(grid[r - 1]) : current;
    case "ArrowDown": return r < grid.length - 1 ? nearest(grid[r + 1]) : current;
    case "Home": return grid[r][0];
    case "End": return grid[r][grid[r].length - 1];
    default: return null;
  }
}

// One seat takes the tab stop: the one last focused while it can be picked, else the first that can.
function rove(map, focused) {
  const grid = seatGrid(map);
  const seats = grid.flat();
  const keep = focused && seats.includes(focused) ? focused : seats.find((s) => s.tabIndex === 0) || seats[0];
  for (const seat of map.querySelectorAll("button.seat")) seat.tabIndex = seat === keep ? 0 : -1;
}

function keyboardSeats(map) {
  map.addEventListener("keydown", (e) => {
    const target = nextSeat(seatGrid(map), document.activeElement, e.key);
    if (!target) return;
    e.preventDefault();
    rove(map, target);
    target.focus();
  });
  map.addEventListener("focusin", (e) => rove(map, e.target));
  // Seats are drawn again and enabled or disabled as the map changes: the tab stop follows.
  new MutationObserver(() => rove(map, document.activeElement))
    .observe(map, { childList: true, subtree: true, attributes: true, attributeFilter: ["disabled"] });
}
