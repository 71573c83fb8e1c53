"""The event catalogue: topics, keys, headers and payloads of the event contract (docs/events).

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
    # Producers are strict (nothing outside the contract is sent); the published schemas (ticketing.contract)
    # mark defaulted fields required, since every message carries them.
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_serialization_defaults_required=True)


_SEAT_MAP_VERSION = ("The showtime's seat-map version after this change: +1 per change, no gap. Applying a "
                     "showtime's SeatsHeld, SeatsReleased, BookingConfirmed and BookingCancelled in this order "
                     "reproduces its seat map.")


def optional(description: str) -> Any:
    """A field added to a version-1 payload after it was published: absent from the message when the producer
    does not know it (an older producer, or nothing to say), so the published schema does not require it and
    a consumer must do without it."""
    return Field(default=None, description=description, exclude_if=lambda value: value is None)


# --- booking-events payloads -------------------------------------------------------------------

class SeatsHeldData(_Model):
    """A customer holds these seats until expiresAt (all or nothing); they are HELD."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Seat codes, sorted (e.g. F5, F6).")
    expiresAt: datetime = Field(description="When the hold ends unless paid (lazy expiry: no event is needed "
                                            "for the seats to be free again; SeatsReleased follows).")
    amountCents: int = Field(description="The seats' price, before any voucher discount.")
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class SeatsReleasedData(_Model):
    """A hold ended without a booking; these seats are AVAILABLE again."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="Only the seats this change freed (a seat another hold took after this "
                                         "one expired is not named); never empty.")
    reason: Literal["CANCELLED", "EXPIRED", "SHOWTIME_CANCELLED"] = Field(
        description="CANCELLED: its customer let go; EXPIRED: its time passed; SHOWTIME_CANCELLED: an operator "
                    "cancelled the showtime (its PENDING payment is cancelled at the gateway).")
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class CheckoutStartedData(_Model):
    """A payment attempt for the hold: the customer was sent to the gateway's page."""

    paymentId: uuid.UUID
    amountCents: int
    discountCents: int
    voucherCode: str | None
    expiresAt: datetime


class PaymentSucceededData(_Model):
    """The gateway took the money for this payment."""

    paymentId: uuid.UUID
    amountCents: int


class PaymentFailedData(_Model):
    """The payment attempt ended unpaid: declined, or its session expired or was cancelled."""

    paymentId: uuid.UUID
    reason: Literal["DECLINED", "EXPIRED"]


class Ticket(_Model):
    """One seat of a booking as it was sold."""

    seat: str = Field(description="The seat code (row + number, e.g. F5).")
    category: str = Field(description="The seat's category: STANDARD, VIP, ACCESSIBLE or COMPANION.")
    ticketType: str = Field(description="ADULT, CHILD, SENIOR or STUDENT.")
    priceCents: int = Field(description="The showtime's price of this category and ticket type.")


class BookingConfirmedData(_Model):
    """The hold's seats are BOOKED for this payment (until a cancellation: BookingCancelled)."""

    holdId: uuid.UUID
    seats: list[str]
    amountCents: int = Field(description="What the customer paid, after the voucher discount.")
    discountCents: int = Field(description="The voucher discount (0 without one): the price was amountCents + "
                                           "discountCents.")
    paymentId: uuid.UUID
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)
    title: str | None = optional("The film (optional: absent from older producers).")
    cinema: str | None = optional("The cinema's name (optional).")
    hall: str | None = optional("The hall's name (optional).")
    startsAt: datetime | None = optional("When the showtime starts, UTC (optional).")
    timeZone: str | None = optional("The cinema's IANA time zone, e.g. Europe/Lisbon (optional): local times "
                                    "are shown in it.")
    tickets: list[Ticket] | None = optional("Each seat with its category, ticket type and price, in seat order "
                                            "(optional).")


class BookingFailedData(_Model):
    """The customer paid but the hold could not be booked; the payment is refunded (RefundIssued)."""

    paymentId: uuid.UUID
    reason: Literal["HOLD_EXPIRED", "HOLD_RELEASED"]


class HoldExtendedData(_Model):
    """The hold lasts longer: its customer started paying (payment-service extends it at checkout)."""

    holdId: uuid.UUID
    expiresAt: datetime = Field(description="The hold's new end: its payment session's end plus the grace "
                                            "within which a payment accepted in time is still booked. Never "
                                            "later than the hold's creation + HOLD_MAX_SECONDS.")


class BookingCancelledData(_Model):
    """A booked booking is cancelled: its seats are AVAILABLE again, its payment is refunded in full
    (RefundIssued), its voucher use is released and its ticket no longer admits."""

    holdId: uuid.UUID
    seats: list[str] = Field(description="The booking's seats, AVAILABLE again.")
    reason: Literal["CUSTOMER", "SHOWTIME_CANCELLED"] = Field(
        description="CUSTOMER: its customer cancelled before the deadline; SHOWTIME_CANCELLED: an operator "
                    "cancelled the showtime.")
    paymentId: uuid.UUID = Field(description="The payment that booked it, refunded in full.")
    seatMapVersion: int = Field(description=_SEAT_MAP_VERSION)


class ShowtimeCancelledData(_Model):
    """An operator cancelled the showtime: sales stop; a BookingCancelled follows for each booking and a
    SeatsReleased{SHOWTIME_CANCELLED} for each live hold."""

    reason: str = Field(description="The operator's words (e.g. projector failure).")


class TicketCheckedInData(_Model):
    """The booking's ticket admitted its group at a door (once per booking)."""

    door: str
    at: datetime = Field(description="When the ticket was scanned (offline scans: when the scanner saw it).")


class RefundIssuedData(_Model):
    """The gateway accepted the refund of this payment."""

    paymentId: uuid.UUID
    amountCents: int
    refundId: str


class _Envelope(_Model):
    eventId: uuid.UUID = Field(description="Unique per event; a redelivered copy has the same id (de-duplicate "
                                           "on it: delivery is at least once).")
    type: str
    version: Literal[1] = 1
    occurredAt: datetime
    source: str = Field(description="The producing service.")


class _BookingEnvelope(_Envelope):
    bookingId: uuid.UUID = Field(description="Also the Kafka key: one booking's events are in order.")
    showtimeId: int
    customerId: int


class SeatsHeld(_BookingEnvelope):
    """hold-service: seats held (booking-events, key bookingId)."""

    type: Literal["SeatsHeld"] = "SeatsHeld"
    data: SeatsHeldData


class SeatsReleased(_BookingEnvelope):
    """hold-service: a hold cancelled or expired, seats freed."""

    type: Literal["SeatsReleased"] = "SeatsReleased"
    data: SeatsReleasedData


class CheckoutStarted(_BookingEnvelope):
    """payment-service: a payment attempt started."""

    type: Literal["CheckoutStarted"] = "CheckoutStarted"
    data: CheckoutStartedData


class PaymentSucceeded(_BookingEnvelope):
    """payment-service: the gateway reports the payment paid."""

    type: Literal["PaymentSucceeded"] = "PaymentSucceeded"
    data: PaymentSucceededData


class PaymentFailed(_BookingEnvelope):
    """payment-service: the payment attempt ended unpaid."""

    type: Literal["PaymentFailed"] = "PaymentFailed"
    data: PaymentFailedData


class BookingConfirmed(_BookingEnvelope):
    """hold-service: the booking is confirmed (seats BOOKED)."""

    type: Literal["BookingConfirmed"] = "BookingConfirmed"
    data: BookingConfirmedData


class BookingFailed(_BookingEnvelope):
    """hold-service: a paid booking could not be honoured."""

    type: Literal["BookingFailed"] = "BookingFailed"
    data: BookingFailedData


class HoldExtended(_BookingEnvelope):
    """hold-service: a live hold's expiry moved later (not a seat-map change: its seats stay HELD)."""

    type: Literal["HoldExtended"] = "HoldExtended"
    data: HoldExtendedData


class RefundIssued(_BookingEnvelope):
    """payment-service: the money went back."""

    type: Literal["RefundIssued"] = "RefundIssued"
    data: RefundIssuedData


class BookingCancelled(_BookingEnvelope):
    """hold-service: a booked booking is cancelled (by its customer, or with its showtime)."""

    type: Literal["BookingCancelled"] = "BookingCancelled"
    data: BookingCancelledData


class TicketCheckedIn(_BookingEnvelope):
    """hold-service: the booking's ticket admitted its group at a door."""

    type: Literal["TicketCheckedIn"] = "TicketCheckedIn"
    data: TicketCheckedInData


class ShowtimeCancelled(_Envelope):
    """hold-service: an operator cancelled a showtime (key `showtime:<showtimeId>`: it concerns no one booking,
    and so carries no bookingId or customerId)."""

    type: Literal["ShowtimeCancelled"] = "ShowtimeCancelled"
    showtimeId: int
    data: ShowtimeCancelledData


BookingEvent = Annotated[
    SeatsHeld | SeatsReleased | CheckoutStarted | PaymentSucceeded | PaymentFailed
    | BookingConfirmed | BookingFailed | RefundIssued | HoldExtended | BookingCancelled | TicketCheckedIn
    | ShowtimeCancelled,
    Field(discriminator="type"),
]
BOOKING_EVENT_TYPES: dict[str, type[_Envelope]] = {
    cls.model_fields["type"].default: cls
    for cls in (SeatsHeld, SeatsReleased, CheckoutStarted, PaymentSucceeded, PaymentFailed,
                BookingConfirmed, BookingFailed, RefundIssued, HoldExtended, BookingCancelled, TicketCheckedIn,
                ShowtimeCancelled)
}
_booking_adapter: TypeAdapter[BookingEvent] = TypeAdapter(BookingEvent)


def booking_event(type_: str, *, source: str, booking_id: uuid.UUID | str, showtime_id: int,
                  customer_id: int, data: dict[str, Any] | BaseModel,
                  occurred_at: datetime | None = None, event_id: uuid.UUID | None = None) -> _BookingEnvelope:
    """Build and validate a booking event; raises pydantic.ValidationError on a contract breach.

    `event_id`: for an event that one cause can make only once (its id derived from the cause), so that
    making it again (a replay, another consumer group) is the same event: the outbox keeps one row, and
    consumers' inboxes apply it once."""
    cls = BOOKING_EVENT_TYPES[type_]
    if not issubclass(cls, _BookingEnvelope):
        raise ValueError(f"{type_} is not about one booking: build it with showtime_event")
    return cls.model_validate({
        "eventId": event_id or uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "bookingId": booking_id, "showtimeId": showtime_id, "customerId": customer_id,
        "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def showtime_event(type_: str, *, source: str, showtime_id: int, data: dict[str, Any] | BaseModel,
                   occurred_at: datetime | None = None, event_id: uuid.UUID | None = None) -> _Envelope:
    """Build and validate an event about a whole showtime (ShowtimeCancelled), keyed `showtime:<id>`."""
    cls = BOOKING_EVENT_TYPES[type_]
    if issubclass(cls, _BookingEnvelope):
        raise ValueError(f"{type_} is about one booking: build it with booking_event")
    return cls.model_validate({
        "eventId": event_id or uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "showtimeId": showtime_id, "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def key_of(event: _Envelope) -> str:
    """The Kafka key on booking-events: the bookingId, or `showtime:<id>` for an event of a whole showtime."""
    if isinstance(event, _BookingEnvelope):
        return str(event.bookingId)
    return f"showtime:{event.showtimeId}"  # type: ignore[attr-defined]


def decode_booking_event(value: bytes) -> BookingEvent:
    return _booking_adapter.validate_json(value)


# --- voucher-reserved ---------------------------------------------------------------------------

class VoucherReserved(_Model):
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

class Outgoing(_Model):
    """One message as it goes to Kafka: topic, key, JSON value and headers."""

    topic: str
    key: str
    value: bytes
    headers: list[tuple[str, bytes]]


def encode(event: BaseModel) -> bytes:
    return orjson.dumps(event.model_dump(mode="json"))


def headers_for(event: _Envelope | VoucherReserved) -> list[tuple[str, bytes]]:
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


def outgoing(event: _Envelope | VoucherReserved) -> Outgoing:
    if isinstance(event, VoucherReserved):
        return Outgoing(topic=VOUCHER_RESERVED, key=event.code, value=encode(event),
                        headers=headers_for(event))
    return Outgoing(topic=BOOKING_EVENTS, key=key_of(event), value=encode(event), headers=headers_for(event))
