"""The event catalogue: the topics, keys and payloads of the event contract (docs/events), in the envelope of
ticketing.envelope. The single source of every event the platform produces; a contract test checks each
produced message against it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from ticketing.envelope import BookingEnvelope, Model, Outgoing, message

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


_SEAT_MAP_VERSION = ("The showtime's seat-map version after this change: +1 per change, no gap. Applying a "
                     "showtime's SeatsHeld, SeatsReleased and BookingConfirmed in this order reproduces its seat map.")


# --- booking-events payloads -------------------------------------------------------------------

class SeatsHeldData(Model):
    """A customer holds these seats until expiresAt (all or nothing); they are HELD."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Seat codes, sorted (e.g. F5, F6).")
    expiresAt: datetime = Field(description="When the hold ends unless paid (lazy expiry: no event is needed "
                                            "for the seats to be free again; SeatsReleased follows).")
    amountCents: int = Field(description="The seats' price, before any voucher discount.")
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class SeatsReleasedData(Model):
    """A hold ended without a booking; these seats are AVAILABLE again."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Only the seats this change freed (a seat another hold took after this "
                                         "one expired is not named); never empty.")
    reason: Literal["CANCELLED", "EXPIRED"]
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class CheckoutStartedData(Model):
    """A payment attempt for the hold: the customer was sent to the gateway's page."""

    paymentId: uuid.UUID
    amountCents: int
    discountCents: int
    voucherCode: str | None
    expiresAt: datetime


class PaymentSucceededData(Model):
    """The gateway took the money for this payment."""

    paymentId: uuid.UUID
    amountCents: int


class PaymentFailedData(Model):
    """The payment attempt ended unpaid: declined, or its session expired or was cancelled."""

    paymentId: uuid.UUID
    reason: Literal["DECLINED", "EXPIRED"]


class BookingConfirmedData(Model):
    """The hold's seats are BOOKED for this payment (final)."""

    holdId: uuid.UUID
    seats: list[str]
    amountCents: int = Field(description="What the customer paid, after the voucher discount.")
    discountCents: int = Field(description="The voucher discount (0 without one): the price was amountCents + "
                                           "discountCents.")
    paymentId: uuid.UUID
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class BookingFailedData(Model):
    """The customer paid but the hold could not be booked; the payment is refunded (RefundIssued)."""

    paymentId: uuid.UUID
    reason: Literal["HOLD_EXPIRED", "HOLD_RELEASED"]


class HoldExtendedData(Model):
    """The hold lasts longer: its customer started paying (payment-service extends it at checkout)."""

    holdId: uuid.UUID
    expiresAt: datetime = Field(description="The hold's new end: its payment session's end plus the grace "
                                            "within which a payment accepted in time is still booked. Never "
                                            "later than the hold's creation + HOLD_MAX_SECONDS.")


class RefundIssuedData(Model):
    """The gateway accepted the refund of this payment."""

    paymentId: uuid.UUID
    amountCents: int
    refundId: str


class SeatsHeld(BookingEnvelope):
    """hold-service: seats held (booking-events, key bookingId)."""

    type: Literal["SeatsHeld"] = "SeatsHeld"
    data: SeatsHeldData


class SeatsReleased(BookingEnvelope):
    """hold-service: a hold cancelled or expired, seats freed."""

    type: Literal["SeatsReleased"] = "SeatsReleased"
    data: SeatsReleasedData


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


class BookingConfirmed(BookingEnvelope):
    """hold-service: the booking is confirmed (seats BOOKED)."""

    type: Literal["BookingConfirmed"] = "BookingConfirmed"
    data: BookingConfirmedData


class BookingFailed(BookingEnvelope):
    """hold-service: a paid booking could not be honoured."""

    type: Literal["BookingFailed"] = "BookingFailed"
    data: BookingFailedData


class HoldExtended(BookingEnvelope):
    """hold-service: a live hold's expiry moved later (not a seat-map change: its seats stay HELD)."""

    type: Literal["HoldExtended"] = "HoldExtended"
    data: HoldExtendedData


class RefundIssued(BookingEnvelope):
    """payment-service: the money went back."""

    type: Literal["RefundIssued"] = "RefundIssued"
    data: RefundIssuedData


BookingEvent = Annotated[
    SeatsHeld | SeatsReleased | CheckoutStarted | PaymentSucceeded | PaymentFailed
    | BookingConfirmed | BookingFailed | RefundIssued | HoldExtended,
    Field(discriminator="type"),
]
BOOKING_EVENT_TYPES: dict[str, type[BookingEnvelope]] = {
    cls.model_fields["type"].default: cls
    for cls in (SeatsHeld, SeatsReleased, CheckoutStarted, PaymentSucceeded, PaymentFailed,
                BookingConfirmed, BookingFailed, RefundIssued, HoldExtended)
}
_booking_adapter: TypeAdapter[BookingEvent] = TypeAdapter(BookingEvent)


def booking_event(type_: str, *, source: str, booking_id: uuid.UUID | str, showtime_id: int,
                  customer_id: int, data: dict[str, Any] | BaseModel,
                  occurred_at: datetime | None = None, event_id: uuid.UUID | None = None) -> BookingEnvelope:
    """Build and validate a booking event; raises pydantic.ValidationError on a contract breach.

    `event_id`: for an event that one cause can make only once (its id derived from the cause), so that
    making it again (a replay, another consumer group) is the same event: the outbox keeps one row, and
    consumers' inboxes apply it once."""
    cls = BOOKING_EVENT_TYPES[type_]
    return cls.model_validate({
        "eventId": event_id or uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "bookingId": booking_id, "showtimeId": showtime_id, "customerId": customer_id,
        "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def decode_booking_event(value: bytes) -> BookingEvent:
    return _booking_adapter.validate_json(value)


# --- voucher-reserved ---------------------------------------------------------------------------

class VoucherReserved(Model):
    """voucher-service, flash mode: one use of a voucher reserved for an order (voucher-reserved, key code)."""

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

def outgoing(event: BookingEnvelope | VoucherReserved) -> Outgoing:
    """The message as it goes to Kafka: the topic, the key and the headers (ticketing.envelope) of its type."""
    if isinstance(event, VoucherReserved):
        return message(VOUCHER_RESERVED, event.code, event, source="voucher-service")
    return message(BOOKING_EVENTS, str(event.bookingId), event, source=event.source)
