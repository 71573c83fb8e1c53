"""The rows of the in-memory schema under the fakes (the tables of sql/schema.sql as plain data)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hold_service.domain.hall import SeatPlace, ShowtimeDetails
from ticketing_testing.in_memory import Clock, MemoryDb

TABLES = ("showtimes", "seats", "bookings", "keys", "outbox", "checkins")  # bookings: hold id -> Hold (status as
# stored); checkins: booking id -> (at, door)


@dataclass(frozen=True)
class Showtime:
    details: ShowtimeDetails
    places: dict[str, SeatPlace]
    version: int = 0  # seatMapVersion
    status: str = "ON_SALE"  # or CANCELLED

    def on_sale(self, now: datetime, close_minutes: float) -> bool:
        """on_sale (sql/schema.sql)."""
        return self.status == "ON_SALE" and now < self.details.starts_at - timedelta(minutes=close_minutes)

    @property
    def title(self) -> str:
        return self.details.title

    @property
    def starts_at(self) -> datetime:
        return self.details.starts_at

    def price(self, seat: str, ticket_type: str) -> int | None:
        return self.details.prices.get(self.places[seat].category, {}).get(ticket_type)


@dataclass(frozen=True)
class Seat:
    status: str = "AVAILABLE"  # AVAILABLE | HELD | BOOKED
    hold_id: uuid.UUID | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Key:
    fingerprint: str
    created_at: datetime
    outcome: dict[str, Any] | None = None


def holds_db(clock: Clock | None = None) -> MemoryDb:
    return MemoryDb(*TABLES, clock=clock)
