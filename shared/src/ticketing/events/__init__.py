"""The event catalogue: the topics, keys and payloads of the event contract (docs/events), in the envelope of
ticketing.envelope. The single source of every event the platform produces; a contract test checks each
produced message against it.

The payloads live in a module per subject (holds, payments, bookings, cancellations, rooms, vouchers); this package
assembles them into the one registry of booking-events types (BOOKING_EVENT_TYPES) that producers, consumers
and the published schemas (ticketing.contract) read, and builds, keys and decodes the messages.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter

from ticketing.envelope import BookingEnvelope, Envelope, Outgoing, message
from ticketing.events.bookings import (
    BookingConfirmed,
    BookingConfirmedData,
    BookingFailed,
    BookingFailedData,
    Ticket,
    TicketCheckedIn,
    TicketCheckedInData,
)
from ticketing.events.cancellations import (
    BookingCancelled,
    BookingCancelledData,
    ShowtimeCancelled,
    ShowtimeCancelledData,
)
from ticketing.events.fields import utcnow
from ticketing.events.holds import (
    HoldExtended,
    HoldExtendedData,
    SeatsHeld,
    SeatsHeldData,
    SeatsReleased,
    SeatsReleasedData,
)
from ticketing.events.payments import (
    CheckoutStarted,
    CheckoutStartedData,
    PaymentFailed,
    PaymentFailedData,
    PaymentSucceeded,
    PaymentSucceededData,
    RefundIssued,
    RefundIssuedData,
)
from ticketing.events.rooms import (
    WaitingRoomClosed,
    WaitingRoomClosedData,
    WaitingRoomOpened,
    WaitingRoomOpenedData,
)
from ticketing.events.topics import (
    BOOKING_EVENTS,
    BOOKING_EVENTS_DLQ,
    TOPICS,
    VOUCHER_RESERVED,
    VOUCHER_RESERVED_DLQ,
    dlq_of,
)
from ticketing.events.vouchers import VoucherReserved, decode_voucher_reserved

BookingEvent = Annotated[
    SeatsHeld | SeatsReleased | CheckoutStarted | PaymentSucceeded | PaymentFailed
    | BookingConfirmed | BookingFailed | RefundIssued | HoldExtended | BookingCancelled | TicketCheckedIn
    | ShowtimeCancelled | WaitingRoomOpened | WaitingRoomClosed,
    Field(discriminator="type"),
]
BOOKING_EVENT_TYPES: dict[str, type[Envelope]] = {
    cls.model_fields["type"].default: cls
    for cls in (SeatsHeld, SeatsReleased, CheckoutStarted, PaymentSucceeded, PaymentFailed,
                BookingConfirmed, BookingFailed, RefundIssued, HoldExtended, BookingCancelled, TicketCheckedIn,
                ShowtimeCancelled, WaitingRoomOpened, WaitingRoomClosed)
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
    if not issubclass(cls, BookingEnvelope):
        raise ValueError(f"{type_} is not about one booking: build it with showtime_event")
    return cls.model_validate({
        "eventId": event_id or uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "bookingId": booking_id, "showtimeId": showtime_id, "customerId": customer_id,
        "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def showtime_event(type_: str, *, source: str, showtime_id: int, data: dict[str, Any] | BaseModel,
                   occurred_at: datetime | None = None, event_id: uuid.UUID | None = None) -> Envelope:
    """Build and validate an event about a whole showtime (ShowtimeCancelled, WaitingRoomOpened,
    WaitingRoomClosed), keyed `showtime:<id>`."""
    cls = BOOKING_EVENT_TYPES[type_]
    if issubclass(cls, BookingEnvelope):
        raise ValueError(f"{type_} is about one booking: build it with booking_event")
    return cls.model_validate({
        "eventId": event_id or uuid.uuid4(), "occurredAt": occurred_at or utcnow(), "source": source,
        "showtimeId": showtime_id, "data": data.model_dump() if isinstance(data, BaseModel) else data,
    })


def key_of(event: Envelope) -> str:
    """The Kafka key on booking-events: the bookingId, or `showtime:<id>` for an event of a whole showtime."""
    if isinstance(event, BookingEnvelope):
        return str(event.bookingId)
    return f"showtime:{event.showtimeId}"  # type: ignore[attr-defined]


def decode_booking_event(value: bytes) -> BookingEvent:
    """A consumer's reading of a message: fields it does not know (added by a newer producer within version 1)
    are ignored, never refused; the producers stay strict (Model forbids them when an event is built)."""
    return _booking_adapter.validate_json(value, extra="ignore")


def outgoing(event: Envelope | VoucherReserved) -> Outgoing:
    """The message as it goes to Kafka: the topic, the key and the headers (ticketing.envelope) of its type."""
    if isinstance(event, VoucherReserved):
        return message(VOUCHER_RESERVED, event.code, event, source="voucher-service")
    return message(BOOKING_EVENTS, key_of(event), event, source=event.source)


__all__ = [
    "BOOKING_EVENTS", "BOOKING_EVENTS_DLQ", "BOOKING_EVENT_TYPES", "TOPICS", "VOUCHER_RESERVED",
    "VOUCHER_RESERVED_DLQ", "BookingCancelled", "BookingCancelledData", "BookingConfirmed",
    "BookingConfirmedData", "BookingEnvelope", "BookingEvent", "BookingFailed", "BookingFailedData",
    "CheckoutStarted", "CheckoutStartedData", "Envelope", "HoldExtended", "HoldExtendedData", "Outgoing",
    "PaymentFailed", "PaymentFailedData", "PaymentSucceeded", "PaymentSucceededData", "RefundIssued",
    "RefundIssuedData", "SeatsHeld", "SeatsHeldData", "SeatsReleased", "SeatsReleasedData", "ShowtimeCancelled",
    "ShowtimeCancelledData", "Ticket", "TicketCheckedIn", "TicketCheckedInData", "VoucherReserved",
    "WaitingRoomClosed", "WaitingRoomClosedData", "WaitingRoomOpened", "WaitingRoomOpenedData",
    "booking_event", "decode_booking_event", "decode_voucher_reserved", "dlq_of", "key_of", "outgoing",
    "showtime_event", "utcnow",
]
