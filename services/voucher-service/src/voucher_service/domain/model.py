"""Vouchers and redemptions: pure rules, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from voucher_service.domain.errors import NotEligible

LIVE = ("RESERVED", "CONFIRMED")
# Why the terms refuse an order, in the order checked.
Ineligibility = Literal["NOT_STARTED", "ENDED", "MIN_ORDER_AMOUNT"]
# Why a quote is not eligible (GET /vouchers/{code}/quote): stable, machine-readable. INVALID is a code that
# is unknown, not yet valid or no longer valid, alike: a quote must not tell which codes exist.
QuoteReason = Literal["INVALID", "MIN_ORDER_AMOUNT", "ALREADY_USED", "OUT_OF_STOCK"]


@dataclass(frozen=True)
class Voucher:
    code: str
    discount_amount: int
    min_order_amount: int
    total_limit: int
    used_count: int
    per_user_limit: int
    starts_at: datetime
    ends_at: datetime
    flash_sale: bool

    def ineligibility(self, order_amount: int, now: datetime) -> Ineligibility | None:
        """The terms: validity window [starts_at, ends_at) and minimum order amount."""
        if now < self.starts_at:
            return "NOT_STARTED"
        if now >= self.ends_at:
            return "ENDED"
        if order_amount < self.min_order_amount:
            return "MIN_ORDER_AMOUNT"
        return None

    def check_eligible(self, order_amount: int, now: datetime) -> None:
        """Raises NotEligible when the terms refuse the order."""
        reason = self.ineligibility(order_amount, now)
        if reason == "MIN_ORDER_AMOUNT":
            raise NotEligible(f"voucher {self.code} needs an order of at least {self.min_order_amount}")
        if reason is not None:
            raise NotEligible(f"voucher {self.code} is valid from {self.starts_at.isoformat()} "
                              f"until {self.ends_at.isoformat()}")

    def quote(self, order_amount: int, now: datetime, *, remaining: int, customer_uses: int) -> Quote:
        """What a reservation would answer now (the per-customer quota before the stock, as reserve checks)."""
        terms = self.ineligibility(order_amount, now)
        reason: QuoteReason | None
        if terms == "MIN_ORDER_AMOUNT":
            reason = terms
        elif terms is not None:
            reason = "INVALID"
        else:
            reason = ("ALREADY_USED" if customer_uses >= self.per_user_limit else
                      "OUT_OF_STOCK" if remaining <= 0 else None)
        return Quote(self.code, reason is None, self.discount_amount if reason is None else 0, reason)


@dataclass(frozen=True)
class Quote:
    code: str
    eligible: bool
    discount_amount: int  # the discount a reservation would give now; 0 when not eligible
    reason: QuoteReason | None

    @classmethod
    def invalid(cls, code: str) -> Quote:
        return cls(code, False, 0, "INVALID")


@dataclass(frozen=True)
class VoucherCounters:
    """The admin's view of a voucher: Postgres' counts and what the flash gate has left."""

    voucher: Voucher
    reserved: int
    confirmed: int
    released: int
    gate_remaining: int | None  # None: not a flash voucher, not loaded, or Redis cannot say


@dataclass(frozen=True)
class Redemption:
    voucher_code: str
    customer_id: int
    order_id: str
    order_amount: int | None
    status: str
    cancelled: bool = False  # released because its booking was cancelled

    @property
    def live(self) -> bool:
        return self.status in LIVE

    def is_retry_of(self, code: str, customer_id: int) -> bool:
        """A reserve with this order id is a retry (same answer) only for the same voucher and customer
        while the use is live; after a release the order id is spent (a retry must not take a new use)."""
        return self.live and self.voucher_code == code and self.customer_id == customer_id


# payment-service's payment statuses (GET /payments/{paymentId}).
PAYMENT_STATUSES = frozenset({"PENDING", "SUCCEEDED", "FAILED", "EXPIRED", "REFUNDED"})
UNPAID_ENDINGS = frozenset({"FAILED", "EXPIRED", "REFUNDED"})


def may_expire(payment_status: str | None) -> bool:
    """May the expiry release a use whose payment has this status? Only once the payment ended unpaid, or
    never existed (None: the checkout died before recording it). PENDING and SUCCEEDED stay reserved,
    however late: their BookingConfirmed, BookingFailed or PaymentFailed settles them."""
    return payment_status is None or payment_status in UNPAID_ENDINGS


@dataclass(frozen=True)
class Reservation:
    order_id: str
    discount_amount: int


@dataclass(frozen=True)
class NormalAttempt:
    """What normal mode's reservation statement did: RESERVED (a use taken, the redemption written), EXISTS
    (the order has a redemption: `existing`), NO_SLOT (the customer's per-user limit is reached) or
    OUT_OF_STOCK (no use left, or outside the voucher's window)."""

    outcome: Literal["RESERVED", "EXISTS", "NO_SLOT", "OUT_OF_STOCK"]
    existing: Redemption | None = None
