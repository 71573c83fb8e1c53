"""The seat-map events Postgres builds (sql/schema.sql append_seat_map_events and its callers: the hold statement,
release_holds, confirm_hold, cancel_booking) are the event catalogue's, exactly: each payload validates, strictly
(no field the model lacks, no value of another JSON type coerced), against its model in ticketing.events and
against that model's own JSON schema, and names the same fields the model writes when it serialises it. The
payloads are written twice, in SQL and in the catalogue; this is what proves the two equal. The consumers'
tolerance (extra fields ignored) would hide a difference, so this test does not decode as they do."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import jsonschema
import pytest
from hold_service.adapters.repository import FORM
from ticketing.events import BOOKING_EVENT_TYPES

pytestmark = pytest.mark.integration
BUILT_IN_SQL = {"SeatsHeld", "SeatsReleased", "BookingConfirmed", "BookingCancelled"}


def fields(value: Any) -> Any:
    """The field names of a JSON document, object by object, and each leaf's JSON type."""
    if isinstance(value, dict):
        return {k: fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fields(v) for v in value]
    return type(value).__name__


def check(event: dict[str, Any]) -> None:
    model = BOOKING_EVENT_TYPES[event["type"]]
    raw = json.dumps(event)
    built = model.model_validate_json(raw, strict=True)  # extra="forbid" (producers are strict), no coercion
    assert fields(json.loads(built.model_dump_json())) == fields(event), event["type"]  # same fields, same types
    schema = model.model_json_schema(mode="serialization")
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(
        event)


async def test_every_seat_map_event_built_in_sql_is_the_catalogue_s(h, fakes, hold_dsn, redis_url) -> None:
    async with h.open_ports("real", fakes, hold_dsn, redis_url) as ports:
        sid = await ports.showtime(seats=9)
        first, _ = await ports.take(sid, ["A1", "A2"], ttl=0.3)  # SeatsHeld, alone
        await asyncio.sleep(0.5)
        second, _ = await ports.take(sid, ["A2", "A3"])  # SeatsReleased{EXPIRED} of `first` (A2), then SeatsHeld
        batch = await asyncio.gather(*(ports.take(sid, [seat]) for seat in ("A4", "A5", "A6")))  # one statement
        expired, _ = await ports.take(sid, ["A7"], ttl=0.3)
        await asyncio.sleep(0.5)
        async with ports.uow() as uow:
            assert await uow.holds.release(second.hold_id, "CANCELLED") is not None  # SeatsReleased{CANCELLED}
            ended = await uow.holds.release(expired.hold_id, "CANCELLED")  # its time passed: {EXPIRED}, as swept
            assert ended is not None and ended.reason == "EXPIRED"
            assert await uow.holds.confirm(batch[0][0].hold_id, uuid.uuid4(), 1000) is not None  # BookingConfirmed
            cancelled = await uow.holds.cancel_booking(batch[0][0].booking_id, "CUSTOMER", 0)  # BookingCancelled
            assert cancelled.outcome == "CANCELLED"
            await uow.commit()
        conn = await asyncpg.connect(hold_dsn)
        try:  # the operator's cancellation of the showtime ends the other holds: SeatsReleased{SHOWTIME_CANCELLED}
            ended = await conn.fetch("SELECT hold_id FROM release_holds($1::uuid[], 'SHOWTIME_CANCELLED', "
                                     "$2::text::jsonb, '[]')", [r.hold_id for r, _ in batch[1:]], FORM)
            assert len(ended) == 2
        finally:
            await conn.close()
        events = [e for r in (first, second, expired, *(r for r, _ in batch)) for e in await ports.events(r.booking_id)]
    seen = {(e["type"], e["data"].get("reason")) for e in events}
    assert seen == {("SeatsHeld", None), ("SeatsReleased", "EXPIRED"), ("SeatsReleased", "CANCELLED"),
                    ("SeatsReleased", "SHOWTIME_CANCELLED"), ("BookingConfirmed", None),
                    ("BookingCancelled", "CUSTOMER")}
    for event in events:
        assert event["type"] in BUILT_IN_SQL and event["source"] == "hold-service"
        check(event)


def test_a_payload_with_a_field_the_catalogue_lacks_or_a_value_of_another_type_is_refused() -> None:
    event = {"eventId": str(uuid.uuid4()), "type": "SeatsReleased", "version": 1,
             "occurredAt": "2031-01-01T10:00:00.000000Z", "source": "hold-service", "bookingId": str(uuid.uuid4()),
             "showtimeId": 1, "customerId": 2,
             "data": {"holdId": str(uuid.uuid4()), "seats": ["A1"], "reason": "EXPIRED", "seatMapVersion": 3}}
    check(event)
    for data in ({"extra": 1}, {"seatMapVersion": "3"}, {"seats": "A1"}):
        with pytest.raises((ValueError, jsonschema.ValidationError)):
            check({**event, "data": {**event["data"], **data}})
