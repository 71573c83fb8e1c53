"""Every event our services put on `booking-events` and `voucher-reserved` obeys the catalogue.

Runs last in `make test` (tests/ sorts after services/ and shared/), so it reads what every other test
made the real services publish, and checks key, headers and payload against `ticketing.events`.
"""

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer
from ticketing.events import BOOKING_EVENTS, VOUCHER_RESERVED, decode_booking_event, decode_voucher_reserved

pytestmark = pytest.mark.integration
PRODUCERS = {"hold-service", "payment-service", "voucher-service"}
HEADERS = {"id", "ce_specversion", "ce_id", "ce_type", "ce_source", "ce_time", "content-type"}


async def read_all(bootstrap: str, topic: str, limit: int = 200_000) -> list:
    # No group: a subscribed consumer without group_id is assigned every partition, from the start.
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        while not consumer.assignment():
            await asyncio.sleep(0.05)
        parts = list(consumer.assignment())
        ends = await consumer.end_offsets(parts)
        records = []
        while any([await consumer.position(tp) < ends[tp] for tp in parts]) and len(records) < limit:
            for batch in (await consumer.getmany(timeout_ms=1000, max_records=5000)).values():
                records.extend(batch)
        return records
    finally:
        await consumer.stop()


def produced_by_us(record) -> bool:
    headers = dict(record.headers or ())
    return headers.get("ce_source", b"").decode() in PRODUCERS


async def test_booking_events_match_the_catalogue(kafka_bootstrap):
    records = [r for r in await read_all(kafka_bootstrap, BOOKING_EVENTS) if produced_by_us(r)]
    assert records, "the suite published no booking event at all"
    types = set()
    for record in records:
        event = decode_booking_event(record.value)  # raises on any contract breach
        headers = {k: v.decode() for k, v in record.headers}
        assert HEADERS <= set(headers), headers
        assert headers["id"] == headers["ce_id"] == str(event.eventId)
        assert headers["ce_type"] == event.type and headers["ce_specversion"] == "1.0"
        assert headers["content-type"] == "application/json"
        assert record.key.decode() == str(event.bookingId), "booking-events are keyed by bookingId"
        types.add(event.type)
    print(f"\ncontract: {len(records)} booking events checked, types {sorted(types)}")


async def test_voucher_reserved_messages_match_the_catalogue(kafka_bootstrap):
    records = [r for r in await read_all(kafka_bootstrap, VOUCHER_RESERVED) if produced_by_us(r)]
    for record in records:
        event = decode_voucher_reserved(record.value)
        assert record.key.decode() == event.code, "voucher-reserved is keyed by voucher code"
        assert dict(record.headers)["id"].decode() == str(event.eventId)
        uuid.UUID(str(event.eventId))
    print(f"\ncontract: {len(records)} VoucherReserved messages checked")


async def test_reader_terminates_on_an_empty_topic(kafka_bootstrap):
    assert isinstance(await read_all(kafka_bootstrap, "booking-events.DLQ", limit=10), list)
