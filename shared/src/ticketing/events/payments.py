"""payment-service's events: a payment attempt started, paid, failed, and its money given back."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from ticketing.envelope import BookingEnvelope, Model
from ticketing.events.fields import currency


class CheckoutStartedData(Model):
    """A payment attempt for the hold: the customer was sent to the gateway's page."""

    paymentId: uuid.UUID
    amountCents: int
    discountCents: int
    voucherCode: str | None
    expiresAt: datetime
    currency: str | None = currency()


class PaymentSucceededData(Model):
    """The gateway took the money for this payment."""

    paymentId: uuid.UUID
    amountCents: int
    currency: str | None = currency()


class PaymentFailedData(Model):
    """The payment attempt ended unpaid: declined, or its session expired or was cancelled."""

    paymentId: uuid.UUID
    reason: Literal["DECLINED", "EXPIRED"]


class RefundIssuedData(Model):
    """The gateway accepted the refund of this payment."""

    paymentId: uuid.UUID
    amountCents: int
    refundId: str
    currency: str | None = currency()


class CheckoutStarted(BookingEnvelope):
    """payment-service: a payment attempt started."""

    type: Literal["CheckoutStarted"] = "CheckoutStarted"
    data: CheckoutStartedData


class PaymentSucceeded(BookingEnvelope):
    """payment-service: the gateway reports the payment paid."""

    type: Literal["PaymentSucceeded"] = "PaymentSucceeded"
    data: PaymentSucceededData


class PaymentFailed(BookingEnvelope):
    """payment-service: the payment attempt ended unpaid."""

    type: Literal["PaymentFailed"] = "PaymentFailed"
    data: PaymentFailedData


class RefundIssued(BookingEnvelope):
    """payment-service: the money went back."""

    type: Literal["RefundIssued"] = "RefundIssued"
    data: RefundIssuedData
