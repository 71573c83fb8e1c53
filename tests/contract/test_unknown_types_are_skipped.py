"""HoldExtended (hold-service, at checkout) reaches every consumer of booking-events: payment-service, voucher-
service and the notifier skip it, and so does hold-service's own consumer; and a consumer built before a type
existed (its catalogue cannot decode it) skips it too instead of dead-lettering it (the contract: a consumer
ignores event types it does not know). No infrastructure: a skipped event never reaches the database."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from aiokafka import ConsumerRecord
from hold_service.config import HoldSettings
from hold_service.entrypoints.consumer import payment_consumer
from notifier.config import NotifierSettings
from notifier.entrypoints.consumer import booking_events_processor
from payment_service.config import Settings as PaymentSettings
from payment_service.entrypoints.consumer import booking_events_consumer as payment_events
from ticketing.consumer import IdempotentConsumer
from ticketing.envelope import headers_of
from ticketing.events import BOOKING_EVENTS, booking_event, outgoing, showtime_event
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.consumer import booking_events_consumer as voucher_events


def consumers() -> dict[str, IdempotentConsumer]:
    """Each service's booking-events consumer, with no pool (a skipped event never asks for a connection)."""
    no_pool: Any = None
    return {
        "hold-service": payment_consumer(HoldSettings(_env_file=None), no_pool, SimpleNamespace()),  # type: ignore[call-arg,arg-type]
        "payment-service": payment_events(SimpleNamespace(settings=PaymentSettings(_env_file=None)), no_pool),  # type: ignore[call-arg,arg-type]
        "voucher-service": voucher_events(VoucherSettings(_env_file=None), no_pool, SimpleNamespace()),  # type: ignore[call-arg,arg-type]
        "notifier": booking_events_processor(SimpleNamespace(settings=NotifierSettings(_env_file=None)), no_pool),  # type: ignore[call-arg,arg-type]
    }


def record(value: bytes) -> ConsumerRecord:
    return ConsumerRecord(BOOKING_EVENTS, 0, 0, 0, 0, b"k", value, None, 0, len(value), ())


HOLD_EXTENDED = outgoing(booking_event("HoldExtended", source="hold-service", booking_id=uuid.uuid4(), showtime_id=42,
                                       customer_id=7, data={"holdId": uuid.uuid4(),
                                                            "expiresAt": "2031-01-01T20:00:00Z"})).value
# Types no consumer of ours acts on (yet): the door's check-in, a showtime's cancellation (the bookings'
# BookingCancelled and the holds' SeatsReleased carry its effects), and its waiting room turning on or off.
NOT_CONSUMED = [
    outgoing(booking_event("TicketCheckedIn", source="hold-service", booking_id=uuid.uuid4(), showtime_id=42,
                           customer_id=7, data={"door": "A", "at": "2031-01-01T19:55:00Z"})).value,
    outgoing(showtime_event("ShowtimeCancelled", source="hold-service", showtime_id=42,
                            data={"reason": "projector failure"})).value,
    outgoing(showtime_event("WaitingRoomOpened", source="hold-service", showtime_id=42,
                            data={"reason": "ARRIVALS", "activeLimit": 200})).value,
    outgoing(showtime_event("WaitingRoomClosed", source="hold-service", showtime_id=42,
                            data={"reason": "RUSH_OVER", "activeLimit": 200})).value,
]
NEWER = orjson.dumps({"eventId": str(uuid.uuid4()), "type": "SomethingAddedLater", "version": 1,
                      "bookingId": str(uuid.uuid4()), "data": {}})


@pytest.mark.parametrize("service", sorted(consumers()))
async def test_every_consumer_skips_hold_extended_and_types_it_does_not_know(service: str) -> None:
    consumer = consumers()[service]
    assert "HoldExtended" not in consumer.config.handlers
    assert await consumer.inbox.apply(record(HOLD_EXTENDED)) == "skipped"
    assert await consumer.inbox.apply(record(NEWER)) == "skipped"
    for value in NOT_CONSUMED:
        assert await consumer.inbox.apply(record(value)) == "skipped"


def test_booking_cancelled_is_consumed_by_payments_vouchers_and_the_notifier() -> None:
    handling = {name for name, consumer in consumers().items() if "BookingCancelled" in consumer.config.handlers}
    assert handling == {"payment-service", "voucher-service", "notifier"}


@pytest.mark.parametrize("service", sorted(consumers()))
async def test_every_consumer_skips_by_the_type_header_without_reading_the_value(service: str) -> None:
    """The producers' own headers name the type: a consumer that has nothing to do with it never decodes the
    value (here unreadable) and never opens a transaction (it has no pool)."""
    consumer = consumers()[service]
    headers = headers_of({"eventId": uuid.uuid4(), "type": "SeatsHeld", "source": "hold-service",
                          "occurredAt": "2031-01-01T19:00:00Z"})
    assert "SeatsHeld" not in consumer.config.handlers
    unreadable = ConsumerRecord(BOOKING_EVENTS, 0, 0, 0, 0, b"k", b"\x00", None, 0, 1, headers)
    assert await consumer.inbox.apply(unreadable) == "skipped"


def test_consumers_whose_effects_are_local_apply_a_partition_batch_in_one_transaction() -> None:
    """hold-service and voucher-service write only their database and Redis: one transaction (one WAL flush) per
    partition batch. payment-service may call the gateway for a released hold's open payment and the notifier
    sends e-mail: a transaction per event, so no batch holds rows while it waits on the network."""
    batched = {name for name, consumer in consumers().items() if consumer.config.batch_transactions}
    assert batched == {"hold-service", "voucher-service"}
