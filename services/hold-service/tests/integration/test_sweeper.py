"""The sweeper's batches on PostgreSQL: many expired holds ended by one statement, one SeatsReleased{EXPIRED} per
hold with the seat-map versions the contract gives (a showtime's events in seatMapVersion order replay its seat
map), two sweepers at once each ending holds of their own, live and booked holds left alone, and the backlog
gauge. Other tests' expired holds may share the database: every check is on this test's own holds."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import pytest
from hold_service.domain.model import TakeSeats
from hold_service.service_layer.lifecycle import BACKLOG_HOLDS, BACKLOG_OLDEST, expired_backlog, sweep_expired
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration

ROWS = {"A": 10, "B": 10, "C": 10}


async def take(svc: Any, sid: int, seats: list[str], ttl: float) -> TakeSeats:
    """One hold as the API's writer takes it."""
    request = TakeSeats(showtime_id=sid, seats=sorted(seats), hold_id=uuid.uuid4(), customer_id=uuid.uuid4().int >> 80,
                        ttl_seconds=ttl, booking_id=uuid.uuid4(), cap=8)
    verdict = await svc.deps.writer.take(request)
    assert verdict.expires_at is not None, verdict
    return request


async def abandoned(svc: Any, sid: int, ttl: float = 0.3) -> list[TakeSeats]:
    """Fifteen holds of two seats each (A1+A2, A3+A4, ...) on the showtime, all expiring at once."""
    seats = [f"{row}{n}" for row, count in ROWS.items() for n in range(1, count + 1)]
    return list(await asyncio.gather(*(take(svc, sid, seats[i:i + 2], ttl) for i in range(0, len(seats), 2))))


async def events(db: asyncpg.Connection, sid: int) -> list[dict[str, Any]]:
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox "
                          "WHERE (convert_from(payload, 'UTF8')::jsonb ->> 'showtimeId')::bigint = $1", sid)
    return sorted((json.loads(r["e"]) for r in rows), key=lambda e: e["data"]["seatMapVersion"])


async def assert_replays(db: asyncpg.Connection, sid: int) -> list[dict[str, Any]]:
    """The showtime's events carry versions 1..its version, once each, and applied in that order give its
    seat rows' statuses; the events."""
    recorded = await events(db, sid)
    version = await db.fetchval("SELECT seat_map_version FROM showtime WHERE showtime_id = $1", sid)
    assert [e["data"]["seatMapVersion"] for e in recorded] == list(range(1, version + 1))
    status = {"SeatsHeld": "HELD", "SeatsReleased": "AVAILABLE", "BookingConfirmed": "BOOKED"}
    replayed = {r["seat_code"]: "AVAILABLE" for r in await db.fetch(
        "SELECT seat_code FROM show_seat WHERE showtime_id = $1", sid)}
    for e in recorded:
        replayed.update({seat: status[e["type"]] for seat in e["data"]["seats"]})
    rows = await db.fetch("SELECT seat_code, status FROM show_seat WHERE showtime_id = $1", sid)
    assert replayed == {r["seat_code"]: r["status"] for r in rows}
    return recorded


def released(recorded: list[dict[str, Any]], request: TakeSeats) -> list[dict[str, Any]]:
    return [e["data"] for e in recorded if e["type"] == "SeatsReleased" and e["bookingId"] == str(request.booking_id)]


async def test_one_statement_ends_many_expired_holds_each_with_its_seats_released_event(
        start, db, statements_of_sweep) -> None:
    async with start(sweep_batch_size=1000) as svc:
        sids = [await svc.showtime(ROWS), await svc.showtime(ROWS)]
        holds = [h for sid in sids for h in await abandoned(svc, sid)]
        await asyncio.sleep(0.5)
        assert await sweep_expired(svc.deps) >= len(holds)
    assert statements_of_sweep[0] >= len(holds)  # the first statement ended them all
    statuses = await db.fetch("SELECT status FROM booking WHERE hold_id = ANY($1::uuid[])", [h.hold_id for h in holds])
    assert {r["status"] for r in statuses} == {"EXPIRED"}
    for sid in sids:
        recorded = await assert_replays(db, sid)
        for request in (h for h in holds if h.showtime_id == sid):
            (data,) = released(recorded, request)
            assert (data["holdId"], data["seats"], data["reason"]) == (str(request.hold_id), request.seats, "EXPIRED")
        assert [e["type"] for e in recorded] == ["SeatsHeld"] * 15 + ["SeatsReleased"] * 15  # versions 16..30


async def test_two_sweepers_at_once_end_each_hold_exactly_once(start, db) -> None:
    async with start(sweep_batch_size=4) as one, start(sweep_batch_size=4) as two:
        sids = [await one.showtime(ROWS) for _ in range(3)]
        holds = [h for sid in sids for h in await abandoned(one, sid)]
        await asyncio.sleep(0.5)
        swept = await asyncio.gather(sweep_expired(one.deps), sweep_expired(two.deps))
    assert sum(swept) >= len(holds)
    for sid in sids:
        recorded = await assert_replays(db, sid)
        assert all(len(released(recorded, h)) == 1 for h in holds if h.showtime_id == sid)


async def test_a_hold_another_transaction_has_locked_is_skipped_not_waited_for(start, db) -> None:
    async with start() as svc:
        sid = await svc.showtime(ROWS)
        locked, *others = await abandoned(svc, sid)
        await asyncio.sleep(0.5)
        async with db.transaction():  # a payment deciding this hold meanwhile
            await db.execute("SELECT 1 FROM booking WHERE hold_id = $1 FOR UPDATE", locked.hold_id)
            await asyncio.wait_for(sweep_expired(svc.deps), 10)
            statuses = dict(await db.fetch("SELECT hold_id, status FROM booking WHERE showtime_id = $1", sid))
        assert statuses[locked.hold_id] == "HELD" and {statuses[h.hold_id] for h in others} == {"EXPIRED"}
        await sweep_expired(svc.deps)
    assert await db.fetchval("SELECT status FROM booking WHERE hold_id = $1", locked.hold_id) == "EXPIRED"
    await assert_replays(db, sid)


async def test_live_and_booked_holds_are_left_alone(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime(ROWS)
        live = await take(svc, sid, ["A1", "A2"], ttl=600)
        booked = await take(svc, sid, ["B1"], ttl=0.3)
        assert await svc.book(str(booked.booking_id), 1200) == "confirmed"
        gone = await take(svc, sid, ["C1"], ttl=0.3)
        await asyncio.sleep(0.5)  # the booked hold's expiry has passed too: a booking has none
        await sweep_expired(svc.deps)
    rows = dict(await db.fetch("SELECT hold_id, status FROM booking WHERE showtime_id = $1", sid))
    assert (rows[live.hold_id], rows[booked.hold_id], rows[gone.hold_id]) == ("HELD", "BOOKED", "EXPIRED")
    seats = await h.seat_rows(db, sid)
    assert [seats[c]["status"] for c in ("A1", "A2", "B1", "C1")] == ["HELD", "HELD", "BOOKED", "AVAILABLE"]
    recorded = await assert_replays(db, sid)
    assert [e["data"]["seats"] for e in recorded if e["type"] == "SeatsReleased"] == [["C1"]]


async def test_the_backlog_gauge_reads_the_expired_holds_still_held_and_the_oldest_age(start, db) -> None:
    async with start() as svc:
        await sweep_expired(svc.deps)  # other tests' leftovers: the backlog starts empty (but for newcomers)
        sid = await svc.showtime(ROWS)
        holds = await abandoned(svc, sid)
        await db.execute("UPDATE booking SET expires_at = now() - interval '1 hour' WHERE hold_id = $1",
                         holds[0].hold_id)  # one expired an hour ago
        await db.execute("UPDATE show_seat SET hold_expires_at = now() - interval '1 hour' WHERE hold_id = $1",
                         holds[0].hold_id)
        await asyncio.sleep(0.5)
        backlog = await expired_backlog(svc.deps)
        assert backlog.holds >= len(holds) and 3600 <= backlog.oldest_seconds < 3660
        assert (BACKLOG_HOLDS._value.get(), BACKLOG_OLDEST._value.get()) == (backlog.holds, backlog.oldest_seconds)
        await sweep_expired(svc.deps)  # refreshes the gauges after its batches
        assert BACKLOG_OLDEST._value.get() < 60


@pytest.fixture
def statements_of_sweep(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The holds each sweep statement ended, in order."""
    from hold_service.adapters.repository import PgHoldRepository

    seen: list[int] = []
    sweep = PgHoldRepository.sweep_expired

    async def counted(self: PgHoldRepository, limit: int) -> Any:
        ended = await sweep(self, limit)
        seen.append(len(ended))
        return ended

    monkeypatch.setattr(PgHoldRepository, "sweep_expired", counted)
    return seen
