"""Commands hold-service handles (HoldSeats, the hot one, lives with the model)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class CreateShowtime:
    showtime_id: int
    title: str
    starts_at: datetime
    price_cents: int
    rows: dict[str, int]


@dataclass(frozen=True)
class CancelHold:
    hold_id: uuid.UUID
    customer_id: int


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
    """The operator turns a showtime's waiting room on or off."""

    showtime_id: int
    enabled: bool
    active_limit: int
    opens_at: datetime | None


@dataclass(frozen=True)
class JoinQueue:
    showtime_id: int
    customer_id: int
    address: str | None  # the client's address, for the per-address rate limit (None: not limited)
