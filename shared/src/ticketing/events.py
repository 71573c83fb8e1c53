"""The event catalogue: topics, keys, headers and payloads of DESIGN.md section 4.

This module is the single source of every event the platform produces; a contract test checks each
produced message against it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

BOOKING_EVENTS = "booking-events"
VOUCHER_RESERVED = "voucher-reserved"
VOUCHER_RESERVED_DLQ = "voucher-reserved.DLQ"
BOOKING_EVENTS_DLQ = "booking-events.DLQ"

# name -> partitions; created idempotently by `ticketing topics`.
TOPICS: dict[str, int] = {
    BOOKING_EVENTS: 6,
    VOUCHER_RESERVED: 3,
    VOUCHER_RESERVED_DLQ: 1,
    BOOKING_EVENTS_DLQ: 1,
}


def dlq_of(topic: str) -> str:
    return f"{topic}.DLQ"


def utcnow() -> datetime:
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- booking-events payloads -------------------------------------------------------------------

class SeatsHeldData(_Model):
    holdId: uuid.UUID
    seats: list[str]
    expiresAt: datetime
    amountCents: int
    seatMapVersion: int


class SeatsReleasedData(_Model):
    holdId: uuid.UUID
    seats: list[str]
    reason: Literal["CANCELLED", "EXPIRED"]
    seatMapVersion: int


class CheckoutStartedData(_Model):
    paymentId: uuid.UUID
    amountCents: int
    discountCents: int
    voucherCode: str | None
    expiresAt: datetime


class PaymentSucceededData(_Model):
    paymentId: uuid.UUID
    amountCents: int


class PaymentFailedData(_Model):
    paymentId: uuid.UUID
    reason: Literal["DECLINED", "EXPIRED"]


class BookingConfirmedData(_Model):
    holdId: uuid.UUID
    seats: list[str]
    amountCents: int  # what the customer paid, after the voucher discount
    discountCents: int
    paymentId: uuid.UUID
    seatMapVersion: int


class BookingFailedData(_Model):
    paymentId: uuid.UUID
    reason: Literal["HOLD_EXPIRED", "HOLD_RELEASED"]


class RefundIssuedData(_Model):
    paymentId: uuid.UUID
    amountCents: int
    refundId: str


class _BookingEnvelope(_Model):
    eventId: uuid.UUID
    type: str
    version: Literal[1] = 1
    occurredAt: datetime
    source: str
    bookingId: uuid.UUID
    showtimeId: int
    customerId: int


class SeatsHeld(_BookingEnvelope):
    type: Literal["SeatsHeld"] = "SeatsHeld"
    data: SeatsHeldData


class SeatsReleased(_BookingEnvelope):
    type: Literal["SeatsReleased"] = "SeatsReleased"
    data: SeatsReleasedData


class CheckoutStarted(_BookingEnvelope):
    type: Literal["CheckoutStarted"] = "CheckoutStarted"
    data: CheckoutStartedData


class PaymentSucceeded(_BookingEnvelope):
    type: Literal["PaymentSucceeded"] = "PaymentSucceeded"
    data: PaymentSucceededData


class PaymentFailed(_BookingEnvelope):
    type: Literal["PaymentFailed"] = "PaymentFailed"
    data: PaymentFailedData


class BookingConfirmed(_BookingEnvelope):
    type: Literal["BookingConfirmed"] = "BookingConfirmed"
    data: BookingConfirmedData


class BookingFailed(_BookingEnvelope):
    type: Literal["BookingFailed"] = "BookingFailed"
    data: BookingFailedData


class RefundIssued(_BookingEnvelope):
    type: Literal["RefundIssued"] = "RefundIssued"
    data: RefundIssuedData


BookingEvent = Annotated[
    SeatsHeld | SeatsReleased | CheckoutStarted | PaymentSucceeded | PaymentFailed
    | BookingConfirmed | BookingFailed | RefundIssued,
    Field(discriminator="type"),
]
BOOKING_EVENT_TYPES: dict[str, type[_BookingEnvelope]] = {
    cls.model_fields["type"].default: cls
    for cls in (SeatsHeld, SeatsReleased, CheckoutStarted, PaymentSucceeded, PaymentFailed,
                BookingConfirmed, BookingFailed, RefundIssued)
}
_booking_adapter: TypeAdapter[BookingEvent] = TypeAdapter(BookingEvent)


def booking_event(type_: str, *, source: str, booking_id: uuid.UUID | str, showtime_id: int,
                  customer_id: int, data: dict[str, Any] | BaseModel,
                  occurred_at: datetime | None = None) -> _BookingEnvelope:
    """Build and validate a booking event; raises pydantic.ValidationError on a contract breach."""
    cls = BOOKING_EVENT_TYPES[type_]
    return cls.model_validate({
        "eventId": uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "bookingId": booking_id, "showtimeId": showtime_id, "customerId": customer_id,
        "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def decode_booking_event(value: bytes) -> BookingEvent:
    return _booking_adapter.validate_json(value)


# --- voucher-reserved ---------------------------------------------------------------------------

class VoucherReserved(_Model):
    eventId: uuid.UUID
    type: Literal["VoucherReserved"] = "VoucherReserved"
    code: str
    customerId: int
    orderId: str
    orderAmount: int
    occurredAt: datetime

    @classmethod
    def new(cls, *, code: str, customer_id: int, order_id: str, order_amount: int) -> VoucherReserved:
        return cls(eventId=uuid.uuid4(), code=code, customerId=customer_id, orderId=order_id,
                   orderAmount=order_amount, occurredAt=utcnow())


def decode_voucher_reserved(value: bytes) -> VoucherReserved:
    return VoucherReserved.model_validate_json(value)


# --- wire format --------------------------------------------------------------------------------

class Outgoing(_Model):
    """One message as it goes to Kafka: topic, key, JSON value and headers."""

    topic: str
    key: str
    value: bytes
    headers: list[tuple[str, bytes]]


def encode(event: BaseModel) -> bytes:
    return orjson.dumps(event.model_dump(mode="json"))


def headers_for(event: _BookingEnvelope | VoucherReserved) -> list[tuple[str, bytes]]:
    """Debezium-compatible `id` plus CloudEvents binary-mode headers."""
    source = getattr(event, "source", "voucher-service")
    return [
        ("id", str(event.eventId).encode()),
        ("ce_specversion", b"1.0"),
        ("ce_id", str(event.eventId).encode()),
        ("ce_type", event.type.encode()),
        ("ce_source", source.encode()),
        ("ce_time", event.occurredAt.isoformat().encode()),
        ("content-type", b"application/json"),
    ]


def outgoing(event: _BookingEnvelope | VoucherReserved) -> Outgoing:
    if isinstance(event, VoucherReserved):
        return Outgoing(topic=VOUCHER_RESERVED, key=event.code, value=encode(event),
                        headers=headers_for(event))
    return Outgoing(topic=BOOKING_EVENTS, key=str(event.bookingId), value=encode(event),
                    headers=headers_for(event))
