"""Request and response bodies of hold-service's API (camelCase on the wire; docs/api)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from ticketing.api.types import StorableText, UtcDatetime, UtcTimestamp

from hold_service.domain.model import MAX_SHOWTIME_ID, Hold


class ShowtimeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    showtimeId: int = Field(ge=1, le=MAX_SHOWTIME_ID)
    title: StorableText = Field(min_length=1, max_length=200)
    startsAt: UtcTimestamp
    priceCents: int = Field(ge=0, le=10_000_000)
    rows: dict[Annotated[str, Field(pattern=r"^[A-Z]{1,3}$")], Annotated[int, Field(ge=1, le=9999)]] = Field(
        min_length=1, max_length=60)


class ShowtimePublic(BaseModel):
    showtimeId: int
    title: str
    startsAt: datetime
    priceCents: int
    seatCount: int


class HoldCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Count, distinctness and codes are checked by the domain (one place, the contract's 422 body).
    seats: list[str] = Field(max_length=64)


class HoldCreated(BaseModel):
    holdId: uuid.UUID
    bookingId: uuid.UUID
    showtimeId: int
    seats: list[str]
    expiresAt: datetime
    amountCents: int

    @classmethod
    def of(cls, hold: Hold) -> HoldCreated:
        return cls(holdId=hold.hold_id, bookingId=hold.booking_id, showtimeId=hold.showtime_id,
                   seats=hold.seats, expiresAt=hold.expires_at, amountCents=hold.amount_cents)


class HoldPublic(HoldCreated):
    customerId: int
    status: Literal["HELD", "BOOKED", "RELEASED", "EXPIRED"]
    createdAt: datetime | None = Field(default=None, description="When the hold was taken: it lasts at most "
                                       "HOLD_MAX_SECONDS from then, extensions included.")

    @classmethod
    def of(cls, hold: Hold) -> HoldPublic:
        return cls(**HoldCreated.of(hold).model_dump(), customerId=hold.customer_id, status=hold.status,
                   createdAt=hold.created_at)


class HoldExtend(BaseModel):
    """payment-service at checkout: keep the hold until `until` (its payment session's end + the grace)."""

    model_config = ConfigDict(extra="forbid")
    until: UtcDatetime
    customerId: int | None = Field(default=None, ge=1, description="The customer checking out: another "
                                   "customer's hold is 404, as for any reader.")


class HoldExtended(BaseModel):
    expiresAt: datetime


class SeatPublic(BaseModel):
    code: str
    status: Literal["AVAILABLE", "HELD", "BOOKED"]


class SeatMapPublic(BaseModel):
    showtimeId: int
    title: str
    startsAt: datetime | None
    version: int
    seats: list[SeatPublic]


# The waiting room (routes/waiting_room.py). Fields beyond the first contract's are additive (docs/waiting-room.md).


class WaitingRoomUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool
    activeLimit: int = Field(ge=1, le=100_000)
    opensAt: UtcDatetime | None = None  # absent: open as soon as enabled


class WaitingRoomStatus(BaseModel):
    """For customers' pages: whether to show the queue before the seat map."""

    showtimeId: int
    enabled: bool
    opensAt: datetime | None
    soldOut: bool


class WaitingRoomAdmin(BaseModel):
    """For operators: the configuration, and the figures of the room's last step (null before its first
    step, or while Redis is unreachable)."""

    showtimeId: int
    enabled: bool
    activeLimit: int
    opensAt: datetime | None
    opened: bool | None
    queueLength: int | None
    active: int | None
    admittedTotal: int | None
    admissionRatePerMinute: float | None
    soldOut: bool | None
    seatsAvailable: int | None
    seatsHeld: int | None
    pausedUntil: datetime | None


class QueueTicket(BaseModel):
    ticket: str
    position: int | None  # null before the opening (the shuffle decides then); 0 when already admitted
    soldOut: bool
    opensAt: datetime | None


class QueuePosition(BaseModel):
    admitted: bool
    position: int | None
    estimatedWaitSeconds: int | None
    admissionToken: str | None
    expiresAt: datetime | None
    soldOut: bool
    opensAt: datetime | None
