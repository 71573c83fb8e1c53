"""The demo's hall, as a cinema draws it, and its prices: what the sale's showtimes are created with
(`POST /admin/showtimes` with a layout and prices by category and ticket type), and which ticket type a
customer asks for each seat he holds.

Rows of up to 20 seats with an aisle (a gap) in the middle. The first row starts with two wheelchair spaces
(ACCESSIBLE) and two COMPANION seats beside them; the last row of a hall of more than one row is VIP. A
customer asks, for a seat now and then, a ticket type other than ADULT that the showtime prices for the
seat's category (CHILD, SENIOR, STUDENT); the server prices every ticket and the checker judges the amounts.
"""

from __future__ import annotations

import functools
import random
from typing import Any

ROW_LENGTH = 20
AISLE = 2
PRICES: dict[str, dict[str, int]] = {
    "STANDARD": {"ADULT": 1200, "CHILD": 800, "SENIOR": 900, "STUDENT": 1000},
    "VIP": {"ADULT": 1800, "SENIOR": 1500},
    "ACCESSIBLE": {"ADULT": 1200, "CHILD": 800},
    "COMPANION": {"ADULT": 600},
}
OTHER_TYPE_SHARE = 0.3  # of the seats held whose category prices a type other than ADULT


def _blocks(count: int, category: str) -> list[dict[str, Any]]:
    """Seats 1..count of one category with the aisle after the first half."""
    half = (count + 1) // 2
    blocks: list[dict[str, Any]] = [{"from": 1, "to": half, "category": category}]
    if count > half:
        blocks += [{"gap": AISLE}, {"from": half + 1, "to": count, "category": category}]
    return blocks


def layout_for(seats: int) -> list[dict[str, Any]]:
    """`seats` seats in rows A, B, ... of ROW_LENGTH (the last row holds what is left)."""
    counts = [min(ROW_LENGTH, seats - start) for start in range(0, seats, ROW_LENGTH)]
    layout = []
    for n, count in enumerate(counts):
        row = chr(ord("A") + n)
        if n == 0 and count > 4:
            blocks = [{"from": 1, "to": 2, "category": "ACCESSIBLE"}, {"from": 3, "to": 4, "category": "COMPANION"},
                      {"gap": AISLE}, {"from": 5, "to": count, "category": "STANDARD"}]
        else:
            blocks = _blocks(count, "VIP" if n == len(counts) - 1 and n > 0 else "STANDARD")
        layout.append({"row": row, "blocks": blocks})
    return layout


def categories_of(layout: list[dict[str, Any]]) -> dict[str, str]:
    """seat code -> its category, in the hall's order."""
    return {f"{row['row']}{n}": block["category"] for row in layout for block in row["blocks"] if "gap" not in block
            for n in range(block["from"], block["to"] + 1)}


@functools.cache
def categories_for(seats: int) -> dict[str, str]:
    """seat code -> category of the sale's hall of `seats` seats."""
    return categories_of(layout_for(seats))


def showtime_body(showtime: int, title: str, seats: int) -> dict[str, Any]:
    """The admin's create body of one of the sale's showtimes: the full hall form."""
    return {"showtimeId": showtime, "title": title, "startsAt": "2031-01-01T20:00:00Z", "durationMinutes": 120,
            "cinema": "Demo Cinema", "hall": "Hall 1", "timeZone": "Europe/Madrid", "layout": layout_for(seats),
            "prices": PRICES}


def ticket_types_for(count: int, category: str, rng: random.Random) -> list[str]:
    """A best-available hold's `ticketTypes`: as a picked seat's ticket would be, one per seat of `category`."""
    others = sorted(t for t in PRICES.get(category, {}) if t != "ADULT")
    return [rng.choice(others) if others and rng.random() < OTHER_TYPE_SHARE else "ADULT" for _ in range(count)]


def tickets_for(seats: list[str], categories: dict[str, str], rng: random.Random) -> list[str | dict[str, str]]:
    """The hold's `seats`: a seat code (an ADULT ticket) or `{"code", "ticketType"}` for another type the
    showtime prices for the seat's category."""
    chosen: list[str | dict[str, str]] = []
    for seat in seats:
        others = sorted(t for t in PRICES.get(categories.get(seat, "STANDARD"), {}) if t != "ADULT")
        if others and rng.random() < OTHER_TYPE_SHARE:
            chosen.append({"code": seat, "ticketType": rng.choice(others)})
        else:
            chosen.append(seat)
    return chosen
