"""Commands payment-service handles."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class StartCheckout:
    hold_id: uuid.UUID
    customer_id: int
    idempotency_key: str
    voucher_code: str | None


@dataclass(frozen=True)
class GatewayCallback:
    """A verified provider event: a Checkout Session's (session_id), a refund's (refund_id), or another."""

    event_id: str
    event_type: str
    session_id: str
    reference: str  # our paymentId, as the provider carries it
    refund_id: str = ""
    refund_status: str = ""
    ignored: bool = False  # a type we do not act on: 200 and nothing


@dataclass(frozen=True)
class RefundFailedBooking:
    """BookingFailed: the customer paid but hold-service could not book."""

    payment_id: uuid.UUID
    reason: str  # HOLD_EXPIRED | HOLD_RELEASED


@dataclass(frozen=True)
class EndPaymentOfReleasedHold:
    """SeatsReleased: the hold is over; its open payment must not be paid any more."""

    hold_id: uuid.UUID


@dataclass(frozen=True)
class RecordBooking:
    """BookingConfirmed: the payment's booking is done."""

    payment_id: uuid.UUID


@dataclass(frozen=True)
class RefundCancelledBooking:
    """BookingCancelled: the booking is cancelled; its payment is refunded in full."""

    payment_id: uuid.UUID
    reason: str  # the event's: CUSTOMER | SHOWTIME_CANCELLED
