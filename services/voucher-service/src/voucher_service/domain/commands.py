"""Commands: what callers ask the service to do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class CreateVoucher:
    code: str
    discount_amount: int
    min_order_amount: int
    total_limit: int
    per_user_limit: int
    starts_at: datetime
    ends_at: datetime
    flash_sale: bool = False


@dataclass(frozen=True)
class ReserveVoucher:
    code: str
    customer_id: int
    order_id: str
    order_amount: int


@dataclass(frozen=True)
class ConfirmReservation:
    order_id: str
    code: str | None = None  # None: from booking-events, which name the order (booking) only


@dataclass(frozen=True)
class ReleaseReservation:
    order_id: str
    code: str | None = None


@dataclass(frozen=True)
class QuoteVoucher:
    code: str
    customer_id: int
    order_amount: int


@dataclass(frozen=True)
class ReadVoucher:
    code: str


@dataclass(frozen=True)
class SettleUse:
    """A booking event's outcome for the use of the payment it names (orderId = paymentId)."""

    order_id: str
    outcome: str  # CONFIRMED | RELEASED


@dataclass(frozen=True)
class CancelUse:
    """BookingCancelled: the use of the payment it names (orderId = paymentId) goes back, even a confirmed one."""

    order_id: str
