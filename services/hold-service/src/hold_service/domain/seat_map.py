"""A showtime's seat map as its changes make it, one version at a time (the seatMapVersion of the events). Pure.

Postgres numbers the changes of a showtime's seat map 1, 2, 3... (seatMapVersion); applying them in that
order to the map at some version gives the map at any later version. A change older than the map is
already in it; a change past the next version means some were missed (a gap): the map is no longer
known and must be reloaded whole.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

SeatStatus = Literal["AVAILABLE", "HELD", "BOOKED"]
SEAT_STATUSES: frozenset[str] = frozenset(("AVAILABLE", "HELD", "BOOKED"))


@dataclass(frozen=True)
class SeatChange:
    """One version of a showtime's seat map: the seats it gave one status (a hold's seats held, freed or booked)."""

    showtime_id: int
    version: int
    status: str
    seats: tuple[str, ...]


class Step(enum.Enum):
    APPLIED = "applied"
    ALREADY_IN = "already_in"  # the map's version already includes it
    GAP = "gap"  # a version between the map's and this one was missed: reload


class SeatMap:
    """Seats (hall order) with their statuses at `version`; changed only by `apply`. The film's title and its
    start (ISO-8601 UTC), each seat's place (category, row, x) and the showtime's other details (cinema, hall,
    prices...) come with it, for the pages: they never change with a version."""

    __slots__ = ("details", "places", "seats", "showtime_id", "starts_at", "title", "version")

    def __init__(self, showtime_id: int, version: int, seats: dict[str, str], title: str = "",
                 starts_at: str | None = None, places: dict[str, tuple[str, str, int]] | None = None,
                 details: dict[str, Any] | None = None) -> None:
        self.showtime_id, self.version, self.seats = showtime_id, version, seats
        self.title, self.starts_at = title, starts_at
        self.places = places or {}  # code -> (category, row, x)
        self.details = details or {}

    def apply(self, change: SeatChange) -> Step:
        if change.version <= self.version:
            return Step.ALREADY_IN
        if change.version != self.version + 1 or change.status not in SEAT_STATUSES:
            return Step.GAP
        if any(code not in self.seats for code in change.seats):  # not this map's seats: it cannot be trusted
            return Step.GAP
        for code in change.seats:
            self.seats[code] = change.status
        self.version = change.version
        return Step.APPLIED
