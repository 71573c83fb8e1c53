"""Request and response bodies of voucher-service's API (docs/api), camelCase on the wire."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator
from ticketing.api.types import UtcDatetime

from voucher_service.domain.model import QuoteReason

# Identifiers are plain ASCII: they are keys in Postgres, Redis and Kafka, and a NUL byte or an unpaired
# surrogate would fail there with a 500 instead of a 422 here.
CODE_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
ORDER_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,64}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VoucherCreate(_Body):
    code: str = Field(pattern=CODE_PATTERN)
    discountAmount: int = Field(ge=0, le=10**12)  # cents; Postgres BIGINT and any real price fit
    minOrderAmount: int = Field(default=0, ge=0, le=10**12)
    totalLimit: int = Field(ge=0, le=2_000_000_000)
    perUserLimit: int = Field(default=1, ge=1, le=1000)
    startsAt: UtcDatetime
    endsAt: UtcDatetime
    flashSale: bool = False

    @model_validator(mode="after")
    def _window(self) -> VoucherCreate:
        if self.startsAt >= self.endsAt:
            raise ValueError("startsAt must be before endsAt")
        return self


class ReservationCreate(_Body):
    customerId: int = Field(ge=1, le=2**63 - 1)
    orderId: str = Field(pattern=ORDER_ID_PATTERN)
    orderAmount: int = Field(ge=0, le=2**63 - 1)


class ReservationPublic(BaseModel):
    orderId: str
    discountAmount: int


class QuotePublic(BaseModel):
    code: str
    eligible: bool
    discountAmount: int = Field(description="The discount (cents) a reservation would give now; 0 when not "
                                            "eligible.")
    reason: QuoteReason | None = Field(description=(
        "null when eligible, else why not, checked in this order: INVALID (no such code, or not valid now: "
        "before startsAt or from endsAt on; the three are not told apart), MIN_ORDER_AMOUNT (orderAmount below "
        "minOrderAmount), ALREADY_USED (the caller holds perUserLimit live uses), OUT_OF_STOCK (no use left). "
        "Advisory: a reservation decides."))


class VoucherPublic(BaseModel):
    code: str
    totalLimit: int
    usedCount: int
    reserved: int
    confirmed: int
    released: int
    gateRemaining: int | None
