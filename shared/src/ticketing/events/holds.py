"""hold-service's events of a hold's life before any booking: seats held, released, a hold extended."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from ticketing.envelope import BookingEnvelope, Model
from ticketing.events.fields import SEAT_MAP_VERSION, currency


class SeatsHeldData(Model):
    """A customer holds these seats until expiresAt (all or nothing); they are HELD."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Seat codes, sorted (e.g. F5, F6).")
    expiresAt: datetime = Field(description="When the hold ends unless paid (lazy expiry: no event is needed "
                                            "for the seats to be free again; SeatsReleased follows).")
    amountCents: int = Field(description="The seats' price, before any voucher discount.")
    seatMapVersion: int = Field(description=SEAT_MAP_VERSION)
    currency: str | None = currency()


class SeatsReleasedData(Model):
    """A hold ended without a booking; these seats are AVAILABLE again."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Only the seats this change freed (a seat another hold took after this "
                                         "one expired is not named); never empty.")
    reason: Literal["CANCELLED", "EXPIRED", "SHOWTIME_CANCELLED"] = Field(
        description="CANCELLED: its customer let go; EXPIRED: its time passed; SHOWTIME_CANCELLED: an operator "
                    "cancelled the showtime (its PENDING payment is cancelled at the gateway).")
    seatMapVersion: int = Field(description=SEAT_MAP_VERSION)


class HoldExtendedData(Model):
    """The hold lasts longer: its customer started paying (payment-service extends it at checkout)."""

    holdId: uuid.UUID
    expiresAt: datetime = Field(description="The hold's new end: its payment session's end plus the grace "
                                            "within which a payment accepted in time is still booked. Never "
                                            "later than the hold's creation + HOLD_MAX_SECONDS.")


class SeatsHeld(BookingEnvelope):
    """hold-service: seats held (booking-events, key bookingId)."""

    type: Literal["SeatsHeld"] = "SeatsHeld"
    data: SeatsHeldData


class SeatsReleased(BookingEnvelope):
    """hold-service: a hold cancelled or expired, seats freed."""

    type: Literal["SeatsReleased"] = "SeatsReleased"
    data: SeatsReleasedData


class HoldExtended(BookingEnvelope):
    """hold-service: a live hold's expiry moved later (not a seat-map change: its seats stay HELD)."""

    type: Literal["HoldExtended"] = "HoldExtended"
    data: HoldExtendedData
