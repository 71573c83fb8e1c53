"""Every event our services put on `booking-events` and `voucher-reserved` obeys the contract.

Runs last in `make test` (marked serial, it runs after the parallel phase; the root conftest.py puts it after
every other test of its own process), so it reads what every other test of this run made the real services
publish (from the run's start time on, TICKETING_RUN_STARTED_AT: a local broker keeps every earlier run's
history), and checks key, headers and payload against the catalogue (`ticketing.events`), against
the published JSON Schemas (docs/events/schemas, with `jsonschema`, a third-party validator), with `kcat`
(a non-Python client), and rebuilds the seat maps with the example consumer of docs/events.
"""

import asyncio
import json
import shutil
import subprocess
import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import jsonschema
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from ticketing.events import (
    BOOKING_EVENTS,
    VOUCHER_RESERVED,
    decode_booking_event,
    decode_voucher_reserved,
    key_of,
)
from ticketing_testing import BASE_TEST_DATABASE, REPO_ROOT, env, require
from ticketing_testing import test_dsn as on_test_database

from .test_published_contract import _example

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # reads what the whole run published
PRODUCERS = {"hold-service", "payment-service", "voucher-service"}
HEADERS = {"id", "ce_specversion", "ce_id", "ce_type", "ce_source", "ce_time", "content-type"}
SCHEMAS = REPO_ROOT / "docs" / "events" / "schemas"


@pytest.fixture(scope="module")
def since_ms(request: pytest.FixtureRequest) -> int:
    return int(getattr(request.config, "started_at", 0) * 1000)


async def read_since(bootstrap: str, topic: str, since_ms: int, limit: int = 200_000) -> list:
    """Every record of `topic` with a timestamp at or after `since_ms`, all partitions, no group."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    parts = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(parts)
        starts = await consumer.offsets_for_times({tp: since_ms for tp in parts})
        ends = await consumer.end_offsets(parts)
        for tp in parts:
            consumer.seek(tp, starts[tp].offset if starts[tp] is not None else ends[tp])
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


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def booking_records(kafka_bootstrap, since_ms) -> list:
    records = [r for r in asyncio.run(read_since(kafka_bootstrap, BOOKING_EVENTS, since_ms)) if produced_by_us(r)]
    assert records, "the suite published no booking event at all"
    return records


def test_booking_events_match_the_catalogue_and_the_published_schemas(booking_records) -> None:
    types: dict[str, int] = {}
    validators = {}
    for record in booking_records:
        event = decode_booking_event(record.value)  # raises on any breach of the catalogue
        headers = {k: v.decode() for k, v in record.headers}
        assert HEADERS <= set(headers), headers
        assert headers["id"] == headers["ce_id"] == str(event.eventId)
        assert headers["ce_type"] == event.type and headers["ce_specversion"] == "1.0"
        assert headers["content-type"] == "application/json"
        assert record.key.decode() == key_of(event), "booking-events are keyed by bookingId (or showtime:<id>)"
        check = validators.setdefault(event.type, validator(event.type))
        errors = [e.message for e in check.iter_errors(json.loads(record.value))]
        assert errors == [], (event.type, errors)
        types[event.type] = types.get(event.type, 0) + 1
    print(f"\ncontract: {len(booking_records)} booking events checked against the catalogue and the schemas: {types}")


def test_voucher_reserved_messages_match_the_catalogue_and_the_published_schema(kafka_bootstrap, since_ms) -> None:
    records = [r for r in asyncio.run(read_since(kafka_bootstrap, VOUCHER_RESERVED, since_ms)) if produced_by_us(r)]
    check = validator("VoucherReserved")
    for record in records:
        event = decode_voucher_reserved(record.value)
        assert record.key.decode() == event.code, "voucher-reserved is keyed by voucher code"
        assert dict(record.headers)["id"].decode() == str(event.eventId)
        uuid.UUID(str(event.eventId))
        assert [e.message for e in check.iter_errors(json.loads(record.value))] == []
    print(f"\ncontract: {len(records)} VoucherReserved messages checked")


def test_kcat_reads_keys_and_headers_as_documented(booking_records, kafka_bootstrap) -> None:
    """A client that is not ours (kcat, librdkafka) sees the key, the headers and the JSON value."""
    require("kcat", shutil.which("kcat") is not None, "run `make contract-tools`")
    sample = booking_records[:: max(1, len(booking_records) // 8)][:8]
    for record in sample:
        out = subprocess.run(
            ["kcat", "-b", kafka_bootstrap, "-C", "-t", record.topic, "-p", str(record.partition), "-o",
             str(record.offset), "-c", "1", "-e", "-f", "%k\n%h\n%s\n"],
            capture_output=True, text=True, timeout=30, check=True).stdout.split("\n")
        key, headers, value = out[0], out[1], out[2]
        event = json.loads(value)
        assert key == event.get("bookingId", f"showtime:{event['showtimeId']}")
        pairs = dict(h.split("=", 1) for h in headers.split(","))
        assert pairs["ce_type"] == event["type"] and pairs["id"] == pairs["ce_id"] == event["eventId"]
        assert pairs["content-type"] == "application/json" and pairs["ce_specversion"] == "1.0"
    print(f"\ncontract: kcat read {len(sample)} records' keys and headers")


def test_the_example_consumer_rebuilds_the_seat_maps_hold_service_keeps(booking_records) -> None:
    """docs/events/examples/seat_map_consumer.py, fed this run's events: every showtime whose whole history
    is in the run (its versions from 1) ends as hold-service's rows say, at the same version."""
    maps = _example().SeatMaps()
    for record in booking_records:
        maps.handle(json.loads(record.value))
    whole = {sid: m for sid, m in maps.maps.items() if not m.waiting and m.version}
    checked = asyncio.run(_compare(whole))
    assert checked, "no showtime of this run could be compared"
    print(f"\ncontract: the example consumer rebuilt {checked} seat maps exactly")


async def _compare(maps: dict) -> int:  # type: ignore[type-arg]
    """Each showtime against its rows in whichever database of the run holds it: the test database, or a
    worker's copy of it where `pytest -n` ran the test that made it."""
    checked = 0
    for dsn in await _run_databases(on_test_database(env("HOLD_DATABASE_URL"))):
        conn = await asyncpg.connect(dsn)
        try:
            for showtime_id, seat_map in maps.items():
                version = await conn.fetchval("SELECT seat_map_version FROM showtime WHERE showtime_id = $1",
                                              showtime_id)
                if version != seat_map.version:
                    continue  # changed after (a later test), or another database's showtime
                rows = await conn.fetch("SELECT seat_code, status FROM show_seat WHERE showtime_id = $1",
                                        showtime_id)
                expected = {r["seat_code"]: r["status"] for r in rows if r["status"] != "AVAILABLE"}
                rebuilt = {k: v for k, v in seat_map.seats.items() if v != "AVAILABLE"}
                assert rebuilt == expected, (showtime_id, version, rebuilt, expected)
                checked += 1
        finally:
            await conn.close()
    return checked


async def _run_databases(dsn: str) -> list[str]:
    """`dsn` and the same role's DSN on every worker copy of its database (ticketing_testing.workers)."""
    conn = await asyncpg.connect(dsn)
    try:
        names = await conn.fetch("SELECT datname FROM pg_database WHERE datname LIKE $1 || '\\_gw%'",
                                 BASE_TEST_DATABASE)
    finally:
        await conn.close()
    parts = urlsplit(dsn)
    return [dsn, *(urlunsplit(parts._replace(path=f"/{row['datname']}")) for row in names)]


def test_reader_terminates_on_an_empty_topic(kafka_bootstrap, since_ms) -> None:
    assert isinstance(asyncio.run(read_since(kafka_bootstrap, "booking-events.DLQ", since_ms, limit=10)), list)


