"""Holds: what a valid request is and what a hold looks like. Pure, no I/O."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from hold_service.domain.errors import InvalidSeats

HoldStatus = Literal["HELD", "BOOKED", "RELEASED", "EXPIRED"]
SEAT_CODE = re.compile(r"^[A-Z]{1,3}[1-9][0-9]{0,3}$")
ROW_NAME = re.compile(r"^[A-Z]{1,3}$")
MAX_SEATS_PER_ROW, MAX_SEATS_PER_SHOWTIME = 9999, 5000
MAX_SHOWTIME_ID = 2**53  # exact in JSON numbers everywhere (JavaScript clients included)


def seat_codes(rows: dict[str, int]) -> list[str]:
    """`{"A": 2, "B": 1}` -> A1, A2, B1. Checked before anything is built: the input sizes the output."""
    bad = [row for row, count in rows.items()
           if not ROW_NAME.match(row) or not 1 <= count <= MAX_SEATS_PER_ROW]
    if bad or not rows:
        raise InvalidSeats(f"rows must be 1-3 capital letters with 1-{MAX_SEATS_PER_ROW} seats each", bad[:5])
    if sum(rows.values()) > MAX_SEATS_PER_SHOWTIME:
        raise InvalidSeats(f"a showtime has at most {MAX_SEATS_PER_SHOWTIME} seats")
    return [f"{row}{n}" for row, count in rows.items() for n in range(1, count + 1)]


def requested_seats(seats: list[str], max_seats: int) -> list[str]:
    """1..max distinct well-formed codes, sorted: every path locks seats in this order (no deadlock)."""
    if not 1 <= len(seats) <= max_seats:
        raise InvalidSeats(f"a hold takes 1 to {max_seats} seats")
    if len(set(seats)) != len(seats):
        raise InvalidSeats("seats must be distinct", sorted({s for s in seats if seats.count(s) > 1}))
    bad = [s for s in seats if not SEAT_CODE.match(s)]
    if bad:
        raise InvalidSeats("unknown seat codes", bad)
    return sorted(seats)


@dataclass(frozen=True)
class HoldSeats:
    """Command: a customer asks for seats of a showtime."""

    showtime_id: int
    customer_id: int
    seats: list[str]
    idempotency_key: str | None = None
    hold_id: uuid.UUID = field(default_factory=uuid.uuid4)
    booking_id: uuid.UUID = field(default_factory=uuid.uuid4)

    def fingerprint(self) -> str:
        """What makes two requests under one Idempotency-Key the same request."""
        return f"{self.showtime_id}:{','.join(sorted(self.seats))}"


@dataclass(frozen=True)
class Hold:
    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    seats: list[str]
    status: HoldStatus
    expires_at: datetime
    amount_cents: int
    payment_id: uuid.UUID | None = None
    seat_map_version: int = 0

    def visible_to(self, customer_id: int | None) -> bool:
        """None = a service principal; a customer sees only his own holds (others get 404)."""
        return customer_id is None or customer_id == self.customer_id
