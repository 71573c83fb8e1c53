"""Commands hold-service handles (HoldSeats, the hot one, lives with the model)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hold_service.domain.hall import ShowtimeDetails
from hold_service.domain.room_rush import RoomMode


@dataclass(frozen=True)
class CreateShowtime:
    """A showtime and its hall: `layout` (rows of blocks, hall.layout_hall) or the old `rows` (every seat
    STANDARD, the details' prices then only STANDARD/ADULT)."""

    details: ShowtimeDetails
    rows: Mapping[str, int] | None = None
    layout: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class CancelHold:
    hold_id: uuid.UUID
    customer_id: int


@dataclass(frozen=True)
class CancelBooking:
    """A customer cancels his booking (before the deadline)."""

    booking_id: uuid.UUID
    customer_id: int


@dataclass(frozen=True)
class CancelShowtime:
    """An operator cancels a showtime (a projector failed): every hold released, every booking cancelled."""

    showtime_id: int
    reason: str


@dataclass(frozen=True)
class ExtendHold:
    """payment-service at checkout: the hold must last until `until` (the session's end + the grace)."""

    hold_id: uuid.UUID
    until: datetime
    customer_id: int | None  # the customer paying: another customer's hold is "not found" (None: not checked)


@dataclass(frozen=True)
class ConfirmBooking:
    """PaymentSucceeded: the payment of a booking, and what was paid (after any voucher discount)."""

    booking_id: uuid.UUID
    payment_id: uuid.UUID
    paid_cents: int


@dataclass(frozen=True)
class ConfigureRoom:
    """The operator turns a showtime's waiting room on or off, or lets it open itself (`mode` auto)."""

    showtime_id: int
    enabled: bool  # the older form: true is mode on, false mode off (`mode`, when given, wins)
    active_limit: int
    opens_at: datetime | None
    mode: RoomMode | None = None
    open_at_arrivals: int | None = None  # the automatic mode's thresholds (None: the deployment's defaults)
    open_at_active: int | None = None


@dataclass(frozen=True)
class JoinQueue:
    showtime_id: int
    customer_id: int | None  # None: a visitor, not signed in (docs/waiting-room.md, "Before signing in")
    address: str | None  # the client's address, for the per-address rate limit (None: not limited)
