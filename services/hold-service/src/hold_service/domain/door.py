"""The door: which scans of a ticket admit its booking's group. Pure, no I/O.

A booking is admitted once. An online scan is admitted when the booking has not been; an offline scan (made
while the scanner had no network, synced later) also when its time is earlier than the admission recorded:
the earliest scan known is the admission (the group entered then, there). Postgres applies the same rule in
one conditional UPDATE (sql/door.sql admit_booking), which is what decides between concurrent scans; this
module says why a scan was refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from hold_service.domain.errors import (
    AlreadyCheckedIn,
    CheckinClosed,
    DoorRefusal,
    TicketInvalid,
    TicketRevoked,
    TooEarly,
)
from hold_service.domain.model import Ticket

DEFAULT_RUNTIME = timedelta(minutes=180)  # a showtime without a duration: how long its door stays open


@dataclass(frozen=True)
class Scan:
    """One scan of a ticket's text at a door of a showtime; `at` None: now (online), else when an offline
    scanner saw it."""

    ticket: str
    showtime_id: int
    door: str
    at: datetime | None = None


@dataclass(frozen=True)
class BookingAtDoor:
    """A booking as the door judges it, with its showtime."""

    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    status: str
    seats: tuple[str, ...]
    tickets: tuple[Ticket, ...]
    checked_in_at: datetime | None
    checked_in_door: str | None
    title: str
    starts_at: datetime
    duration_minutes: int | None
    showtime_status: str

    def window(self, opens_minutes: float) -> tuple[datetime, datetime]:
        """From `opens_minutes` before the start to the showtime's end."""
        runtime = timedelta(minutes=self.duration_minutes) if self.duration_minutes else DEFAULT_RUNTIME
        return self.starts_at - timedelta(minutes=opens_minutes), self.starts_at + runtime

    def repeats(self, at: datetime, door: str) -> bool:
        """This very scan is the recorded admission (an offline batch sent again after a lost answer)."""
        return self.checked_in_at == at and self.checked_in_door == door


def refusal(booking: BookingAtDoor | None, showtime_id: int, at: datetime, door: str, opens_minutes: float,
            *, offline: bool) -> DoorRefusal | None:
    """Why a scan of `booking`'s ticket at `at` does not admit it now, or None (it may: Postgres decides)."""
    if booking is None or booking.showtime_id != showtime_id:
        return TicketInvalid("the ticket names no booking of this showtime")
    if booking.status != "BOOKED" or booking.showtime_status == "CANCELLED":
        return TicketRevoked("the booking was cancelled and refunded: this ticket admits no one")
    if booking.checked_in_at is not None and not (offline and at < booking.checked_in_at):
        if offline and booking.repeats(at, door):
            return None
        return AlreadyCheckedIn(booking.checked_in_at, booking.checked_in_door or "")
    opens, ends = booking.window(opens_minutes)
    if at < opens:
        return TooEarly(f"check-in opens at {opens.isoformat()}")
    if at >= ends:
        return CheckinClosed(f"the showtime ended at {ends.isoformat()}")
    return None
