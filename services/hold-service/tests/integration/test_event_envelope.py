"""One envelope for both writers of events (ticketing.envelope): a SeatsHeld that Postgres builds (the hold
writer, sql/schema.sql append_seat_map_events) and one the Python outbox writer builds from the catalogue
carry the same headers, in the same order, and envelopes of the same shape; both name their cause with
`x-request-id` and the `traceparent` of the span they were written in."""

from __future__ import annotations

import json
import uuid
from typing import Any

import asyncpg
import pytest
from ticketing import outbox, request_id
from ticketing.envelope import HEADERS
from ticketing.events import booking_event, decode_booking_event
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


async def _row(conn: asyncpg.Connection, booking_id: uuid.UUID) -> tuple[dict[str, Any], list[list[str]]]:
    await numbered(conn)
    row = await conn.fetchrow("SELECT convert_from(payload, 'UTF8') AS payload, headers::text AS headers FROM outbox "
                              "WHERE message_key = $1 ORDER BY id DESC LIMIT 1", str(booking_id))
    assert row is not None
    return json.loads(row["payload"]), json.loads(row["headers"])


def _shape(value: Any) -> Any:
    """The JSON types of a document, key by key."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


async def test_sql_and_python_writers_share_one_envelope_and_its_headers(h, fakes, hold_dsn, redis_url,
                                                                          traced) -> None:
    _, provider = traced
    async with h.open_ports("real", fakes, hold_dsn, redis_url) as ports:
        sid = await ports.showtime()
        token = request_id.CURRENT.set("envelope-test-1")
        try:
            with provider.get_tracer("test").start_as_current_span("hold") as span:
                request, verdict = await ports.take(sid, ["A1", "A2"])  # SQL: take_seats, batched or alone
                python_made = booking_event("SeatsHeld", source="hold-service", booking_id=uuid.uuid4(),
                                            showtime_id=sid, customer_id=request.customer_id,
                                            data={"holdId": request.hold_id, "seats": request.seats,
                                                  "expiresAt": verdict.expires_at, "amountCents": 2400,
                                                  "seatMapVersion": 1})
                conn = await asyncpg.connect(hold_dsn)
                async with conn.transaction():
                    await outbox.append(conn, python_made)
        finally:
            request_id.CURRENT.reset(token)
        sql, sql_headers = await _row(conn, request.booking_id)
        python, python_headers = await _row(conn, python_made.bookingId)
        await conn.close()
    context = span.get_span_context()
    span_ids = [f"{context.trace_id:032x}", f"{context.span_id:016x}"]
    for event, headers in ((sql, sql_headers), (python, python_headers)):
        decode_booking_event(json.dumps(event).encode())  # the catalogue's SeatsHeld, either way
        assert [name for name, _ in headers] == [name for name, _ in HEADERS] + ["traceparent", "x-request-id"]
        by_name = dict(headers)
        assert by_name["id"] == by_name["ce_id"] == event["eventId"]
        assert (by_name["ce_type"], by_name["ce_source"], by_name["ce_time"]) == (
            "SeatsHeld", "hold-service", event["occurredAt"])
        assert (by_name["ce_specversion"], by_name["content-type"]) == ("1.0", "application/json")
        assert by_name["traceparent"].split("-")[1:3] == span_ids and by_name["x-request-id"] == "envelope-test-1"
    assert _shape(sql) == _shape(python)


async def test_without_a_cause_the_sql_writer_adds_no_cause_headers(h, fakes, hold_dsn, redis_url) -> None:
    async with h.open_ports("real", fakes, hold_dsn, redis_url) as ports:
        request, _ = await ports.take(await ports.showtime(), ["A1"])
        conn = await asyncpg.connect(hold_dsn)
        try:
            _, headers = await _row(conn, request.booking_id)
        finally:
            await conn.close()
    assert [name for name, _ in headers] == [name for name, _ in HEADERS]
