"""Request/response bodies of payment-service's API (docs/api)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CheckoutCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # ASCII like voucher-service's codes: a NUL byte or an unpaired surrogate would 500 in Postgres.
    voucherCode: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,32}$")


class CheckoutPublic(BaseModel):
    paymentId: str
    bookingId: str
    amountCents: int
    discountCents: int
    redirectUrl: str | None
    expiresAt: str


class PaymentPublic(BaseModel):
    paymentId: str
    bookingId: str
    holdId: str
    status: str
    amountCents: int
    discountCents: int
    voucherCode: str | None
    expiresAt: str
    refundId: str | None


class EventData(BaseModel):
    object: dict[str, Any] = Field(description="The object the event is about: a Checkout Session (`id`, "
                                   "`client_reference_id`, `metadata`), a Charge or a Refund (`metadata.paymentId`).")


class CallbackEvent(BaseModel):
    """A Stripe event, as Stripe sends it (only these fields are read)."""

    id: str = Field(min_length=1, max_length=200, description="The event id (`evt_...`): a repeat is 200 and nothing.")
    type: str
    created: int
    livemode: bool = False
    data: EventData


class CallbackAck(BaseModel):
    received: bool = True
    outcome: str
