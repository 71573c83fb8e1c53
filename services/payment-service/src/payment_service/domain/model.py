"""Payments, and the booking saga's rules that payment-service owns (pure: no I/O).

The booking saga (docs/saga.md has the whole table):

    hold-service      SeatsHeld ─ hold HELD ─┬─ PaymentSucceeded, in time ─> BOOKED, BookingConfirmed
                                             ├─ PaymentSucceeded, too late ─> BookingFailed
                                             └─ DELETE or expiry ─> SeatsReleased
    payment-service   checkout ─ hold extended to the session's end + grace (HoldExtended), then
                      PENDING ─┬─ gateway paid ─> SUCCEEDED, PaymentSucceeded
                               ├─ gateway failed ─> FAILED, PaymentFailed{DECLINED}
                               └─ gateway expired/cancelled ─> EXPIRED, PaymentFailed{EXPIRED}
                      SUCCEEDED ─┬─ BookingConfirmed ─> booked
                                 ├─ BookingFailed ─> refund due ─ gateway refund ─> REFUNDED, RefundIssued
                                 └─ BookingCancelled (booked, or its BookingConfirmed still to come) ─>
                                    refund due (the full amount paid) ─> REFUNDED, RefundIssued
                      FAILED/EXPIRED ─ gateway paid after all ─> refund due ─> REFUNDED, RefundIssued
                      SeatsReleased ─> the hold's PENDING payment is cancelled at the gateway (its state
                                       then settles it as above)

Every transition is a conditional UPDATE from the states listed (stale or repeated events change
nothing), and the gateway's session state, never a callback's type or arrival order, settles a payment.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

PaymentStatus = Literal["PENDING", "SUCCEEDED", "FAILED", "EXPIRED", "REFUNDED"]
RefundReason = Literal["HOLD_EXPIRED", "HOLD_RELEASED", "PAID_AFTER_SETTLEMENT", "CUSTOMER_CANCELLED",
                       "SHOWTIME_CANCELLED"]
# BookingCancelled's reason -> the refund's: the only refunds a booked payment may get.
CANCELLATION_REFUNDS: dict[str, RefundReason] = {"CUSTOMER": "CUSTOMER_CANCELLED",
                                                 "SHOWTIME_CANCELLED": "SHOWTIME_CANCELLED"}


@dataclass(frozen=True)
class Hold:
    """What hold-service says of a hold (GET /holds/{id}); its status is decided by hold-service's clock."""

    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    status: str  # HELD | BOOKED | RELEASED | EXPIRED
    expires_at: datetime
    amount_cents: int
    created_at: datetime | None = None  # None: a hold-service that does not say (no extension past expires_at)
    currency: str | None = None  # the showtime's; None: a hold-service that does not say (CURRENCY then)

    @property
    def active(self) -> bool:
        return self.status == "HELD"


@dataclass(frozen=True)
class CheckoutWindow:
    """When a checkout's gateway session ends, and how long its hold must last for that."""

    session_ends_at: datetime
    hold_until: datetime  # the session's end + the grace: a payment accepted in time, applied late, still books


def checkout_window(hold: Hold, now: datetime, *, session_seconds: float, hold_max_seconds: float,
                    grace_seconds: float, min_session_seconds: float) -> CheckoutWindow | None:
    """Paying in time always books. The session ends at min(now + the session TTL, the hold's creation +
    HOLD_MAX - the grace), and the hold is extended to that end + the grace BEFORE the session exists, so the
    PaymentSucceeded of a payment the gateway accepted before the session ended may reach hold-service up
    to the grace late and still find the hold live. None: less than `min_session_seconds` would be left to
    pay (the customer holds the seats again)."""
    cap = hold.created_at + timedelta(seconds=hold_max_seconds) if hold.created_at else hold.expires_at + \
        timedelta(seconds=grace_seconds)  # unknown creation: the hold's current end is all we may count on
    ends = min(now + timedelta(seconds=session_seconds), cap - timedelta(seconds=grace_seconds))
    if ends - now < timedelta(seconds=min_session_seconds):
        return None
    return CheckoutWindow(session_ends_at=ends, hold_until=ends + timedelta(seconds=grace_seconds))


@dataclass(frozen=True)
class Payment:
    payment_id: uuid.UUID
    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    amount_cents: int  # what the customer pays, after the discount
    discount_cents: int
    voucher_code: str | None
    status: PaymentStatus
    expires_at: datetime
    session_id: str | None = None
    redirect_url: str | None = None
    refund_id: str | None = None
    refund_reason: str | None = None
    refund_attempts: int = 0
    currency: str = "EUR"  # ISO 4217, upper case

    @property
    def refunded_for_cancellation(self) -> bool:
        """Its money is due back (or back) because its booking was cancelled."""
        return self.refund_reason in CANCELLATION_REFUNDS.values()

    @property
    def voucher_use_ended(self) -> bool:
        """A voucher use this payment reserved can be given back: the payment will never be booked."""
        return self.voucher_code is not None and self.status in ("FAILED", "EXPIRED", "REFUNDED")


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


def charged_amount(hold_amount: int, discount: int) -> tuple[int, int]:
    """(amount to charge, discount actually applied): a discount never makes the price negative."""
    applied = max(0, min(discount, hold_amount))
    return hold_amount - applied, applied


def refund_backoff(attempts: int, first: float = 2.0, cap: float = 300.0) -> float:
    """Seconds before the next refund attempt after `attempts` failed ones (exponential, capped)."""
    return float(min(cap, first * 2 ** max(0, attempts - 1)))
