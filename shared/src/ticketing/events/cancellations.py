"""hold-service's events of a cancellation: one booking's (by its customer or with its showtime), and a whole
showtime's."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from ticketing.envelope import BookingEnvelope, Envelope, Model
from ticketing.events.fields import SEAT_MAP_VERSION


class BookingCancelledData(Model):
    """A booked booking is cancelled: its seats are AVAILABLE again, its payment is refunded in full
    (RefundIssued), its voucher use is released and its ticket no longer admits."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="The booking's seats, AVAILABLE again.")
    reason: Literal["CUSTOMER", "SHOWTIME_CANCELLED"] = Field(
        description="CUSTOMER: its customer cancelled before the deadline; SHOWTIME_CANCELLED: an operator "
                    "cancelled the showtime.")
    paymentId: uuid.UUID = Field(description="The payment that booked it, refunded in full.")
    seatMapVersion: int = Field(description=SEAT_MAP_VERSION)


class ShowtimeCancelledData(Model):
    """An operator cancelled the showtime: sales stop; a BookingCancelled follows for each booking and a
    SeatsReleased{SHOWTIME_CANCELLED} for each live hold."""

    reason: str = Field(description="The operator's words (e.g. projector failure).")


class BookingCancelled(BookingEnvelope):
    """hold-service: a booked booking is cancelled (by its customer, or with its showtime)."""

    type: Literal["BookingCancelled"] = "BookingCancelled"
    data: BookingCancelledData


class ShowtimeCancelled(Envelope):
    """hold-service: an operator cancelled a showtime (key `showtime:<showtimeId>`: it concerns no one booking,
    and so carries no bookingId or customerId)."""

    type: Literal["ShowtimeCancelled"] = "ShowtimeCancelled"
    showtimeId: int
    data: ShowtimeCancelledData
