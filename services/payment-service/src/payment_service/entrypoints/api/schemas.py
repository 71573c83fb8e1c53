"""Request/response bodies of payment-service's API (docs/api)."""

from __future__ import annotations

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


class CallbackData(BaseModel):
    sessionId: str
    reference: str
    amountCents: int


class CallbackEvent(BaseModel):
    id: str = Field(min_length=1, max_length=200)
    type: str
    created: int
    data: CallbackData


class CallbackAck(BaseModel):
    received: bool = True
    outcome: str
