"""Payments and how a gateway session's state decides them (pure: no I/O)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

PaymentStatus = Literal["PENDING", "SUCCEEDED", "FAILED", "EXPIRED", "REFUNDED"]
GatewayStatus = Literal["open", "paid", "failed", "expired"]


@dataclass(frozen=True)
class Hold:
    """What hold-service tells us about a hold (GET /holds/{id})."""

    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    status: str
    expires_at: datetime
    amount_cents: int

    def is_active(self, now: datetime) -> bool:
        return self.status == "HELD" and self.expires_at > now


@dataclass(frozen=True)
class Payment:
    payment_id: uuid.UUID
    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    amount_cents: int
    discount_cents: int
    voucher_code: str | None
    status: PaymentStatus
    expires_at: datetime
    session_id: str | None = None
    redirect_url: str | None = None
    refund_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The payment status a gateway state leads to, and the event that announces it."""

    status: PaymentStatus
    event_type: str
    reason: str | None = None


# The gateway is the source of truth: whatever callback arrived, its session state decides.
_OUTCOMES: dict[str, Outcome] = {
    "paid": Outcome("SUCCEEDED", "PaymentSucceeded"),
    "failed": Outcome("FAILED", "PaymentFailed", "DECLINED"),
    "expired": Outcome("EXPIRED", "PaymentFailed", "EXPIRED"),
}


def outcome_of(gateway_status: str) -> Outcome | None:
    """None while the session is still open: nothing is decided yet."""
    return _OUTCOMES.get(gateway_status)


def session_expiry(now: datetime, ttl_seconds: int, hold_expires_at: datetime) -> datetime:
    """The session expires TTL after creation and never after the hold (seed 000, section 5)."""
    return min(now + timedelta(seconds=ttl_seconds), hold_expires_at)


def charged_amount(hold_amount: int, discount: int) -> tuple[int, int]:
    """(amount to charge, discount actually applied): a discount never makes the price negative."""
    applied = max(0, min(discount, hold_amount))
    return hold_amount - applied, applied
