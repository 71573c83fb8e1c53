"""A hall as it is drawn (rows of blocks with gaps, each seat of a category) and the prices of a showtime by
category and ticket type. Pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hold_service.domain.errors import InvalidSeats, UnpricedTickets
from hold_service.domain.model import DEFAULT_TICKET_TYPE, MAX_SEATS_PER_ROW, MAX_SEATS_PER_SHOWTIME, ROW_NAME

CATEGORIES = ("STANDARD", "VIP", "ACCESSIBLE", "COMPANION")
Prices = Mapping[str, Mapping[str, int]]  # category -> ticket type -> cents


@dataclass(frozen=True)
class ShowtimeDetails:
    """What the catalogue says of a showtime besides its seats."""

    showtime_id: int
    title: str
    starts_at: datetime
    prices: Prices
    duration_minutes: int | None = None
    cinema: str | None = None
    hall: str | None = None
    time_zone: str = "UTC"
    no_lone_seat: bool = False  # no hold may leave a single free seat between taken seats or at a row's end
    currency: str | None = None  # ISO 4217; None: the deployment's CURRENCY


@dataclass(frozen=True)
class SeatPlace:
    """A seat of the hall: its code (row + number), category, row and place in the row's drawing (x counts
    the gaps, from 1)."""

    code: str
    category: str
    row: str
    x: int
    rank: int = 0  # for best available, lower is better (ranked)


def rows_hall(rows: Mapping[str, int]) -> list[SeatPlace]:
    """The old form `{"A": 2, "B": 1}`: A1, A2, B1, every seat STANDARD, no gaps."""
    bad = [row for row, count in rows.items() if not ROW_NAME.match(row) or not 1 <= count <= MAX_SEATS_PER_ROW]
    if bad or not rows:
        raise InvalidSeats(f"rows must be 1-3 capital letters with 1-{MAX_SEATS_PER_ROW} seats each", bad[:5])
    if sum(rows.values()) > MAX_SEATS_PER_SHOWTIME:
        raise InvalidSeats(f"a showtime has at most {MAX_SEATS_PER_SHOWTIME} seats")
    return [SeatPlace(f"{row}{n}", "STANDARD", row, n) for row, count in rows.items() for n in range(1, count + 1)]


def row_ranks(layout: Sequence[Mapping[str, Any]] | None) -> dict[str, int]:
    """The rows' own ranks for best available, where the layout names them (`"rank": 1` is the best row)."""
    return {r["row"]: 2 * r["rank"] for r in layout or () if r.get("rank") is not None}


def layout_hall(layout: Sequence[Mapping[str, Any]]) -> list[SeatPlace]:
    """Rows of blocks: `{"from": 1, "to": 4, "category": "VIP"}` (seats row+1..row+4; no category: STANDARD)
    or `{"gap": 2}` (two empty places in the drawing). Seat numbers are distinct within a row; the size is
    checked block by block, before anything is built."""
    places: list[SeatPlace] = []
    if len({r["row"] for r in layout}) != len(layout):
        raise InvalidSeats("each row is described once", sorted({r["row"] for r in layout
                                                                  if [x["row"] for x in layout].count(r["row"]) > 1}))
    for row in layout:
        name, x, numbers = row["row"], 0, set[int]()
        for block in row["blocks"]:
            if "gap" in block:
                x += block["gap"]
                continue
            first, last = block["from"], block["to"]
            if first > last or numbers.intersection(range(first, last + 1)):
                raise InvalidSeats(f"row {name}: seats {first}-{last} overlap or run backwards", [name])
            if len(places) + last - first + 1 > MAX_SEATS_PER_SHOWTIME:
                raise InvalidSeats(f"a showtime has at most {MAX_SEATS_PER_SHOWTIME} seats")
            numbers.update(range(first, last + 1))
            category = block.get("category") or "STANDARD"
            for n in range(first, last + 1):
                x += 1
                places.append(SeatPlace(f"{name}{n}", category, name, x))
        if not numbers:
            raise InvalidSeats(f"row {name} has no seats", [name])
    return places


ROW_WEIGHT = 1_000_000  # a row's rank outweighs any sum of places within rows (8 seats x 2 x 10,000 places)


def ranked(places: Sequence[SeatPlace], row_ranks: Mapping[str, int] | None = None) -> list[SeatPlace]:
    """Each seat with its rank for best available: its row's rank (the layout's own, `row_ranks`, first; then
    the distance from the middle of the hall, rows in their order of description), then twice its distance from
    the centre of its row's drawing; lower is better, and a run is as good as the sum of its seats' ranks."""
    rows = list(dict.fromkeys(p.row for p in places))
    middle = len(rows) - 1  # twice the middle index: integers, and the two middle rows of an even hall tie
    named = row_ranks or {}
    after = max(named.values(), default=-1) + 1  # rows the layout ranks come first, the others after them
    row_rank = {row: named.get(row, after + abs(2 * i - middle)) for i, row in enumerate(rows)}
    centre = {row: min(p.x for p in places if p.row == row) + max(p.x for p in places if p.row == row)
              for row in rows}  # twice the centre
    return [replace(p, rank=row_rank[p.row] * ROW_WEIGHT + abs(2 * p.x - centre[p.row])) for p in places]


def check_prices(prices: Prices, places: Sequence[SeatPlace]) -> None:
    """Every category the hall uses has an ADULT price (a seat anyone can buy)."""
    used = sorted({p.category for p in places}, key=CATEGORIES.index)
    if missing := [c for c in used if DEFAULT_TICKET_TYPE not in prices.get(c, {})]:
        raise UnpricedTickets(f"every category used needs an {DEFAULT_TICKET_TYPE} price; missing: "
                              f"{', '.join(missing)}", missing)


def from_price_cents(prices: Prices) -> int:
    """The lowest price of the showtime (what 'from' says in the catalogue)."""
    return min(cents for by_type in prices.values() for cents in by_type.values())
