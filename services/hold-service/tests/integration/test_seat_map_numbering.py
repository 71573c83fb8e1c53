"""Seat-map versions given after COMMIT (sql/schema.sql append_seat_map_events, number_seat_map_changes;
adapters/seat_map_versions.py): holds of one showtime no longer wait for each other's COMMIT on the showtime's row,
a change is told to the seat maps and released to the relay only once numbered, the versions follow the order of
each seat's changes, and a caller of the previous release (no "versionsAfterCommit" in its form) still gets its
versions in its transaction, after the pending ones.

The tests that must see a change before it is numbered hold the numbering's lock themselves (every process's
numberer then leaves the work for later), for as short a time as they can."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import orjson
import pytest
from hold_service.adapters import repository
from hold_service.adapters.repository import FORM
from hold_service.domain.model import TakeSeats
from ticketing.outbox import QUERIES
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration

PREVIOUS_FORM = orjson.dumps({k: v for k, v in orjson.loads(FORM).items() if k != "versionsAfterCommit"}).decode()


def take(sid: int, seats: list[str]) -> TakeSeats:
    return TakeSeats(showtime_id=sid, seats=seats, hold_id=uuid.uuid4(), customer_id=uuid.uuid4().int % 10**12,
                     ttl_seconds=60, booking_id=uuid.uuid4(), cap=8)


@asynccontextmanager
async def numbering_held(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """No process numbers seat-map changes meanwhile (the numbering's lock, held by this session)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock(seat_map_numbering_key())")
        yield conn
    finally:
        await conn.close()  # the lock goes with the session


async def showtime_events(db: asyncpg.Connection, sid: int) -> list[dict[str, Any]]:
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox "
                          "WHERE (convert_from(payload, 'UTF8')::jsonb->>'showtimeId')::bigint = $1 ORDER BY id", sid)
    return [json.loads(r["e"]) for r in rows]


async def test_two_holds_of_one_showtime_commit_side_by_side(start, db, hold_dsn: str) -> None:
    """B's hold does not wait for A's COMMIT (it did while each hold locked the showtime's row to number its
    change); A wrote first, so A's change is version 1 though B committed first."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    a, b = await asyncpg.connect(hold_dsn), await asyncpg.connect(hold_dsn)
    try:
        first, second = take(sid, ["F1"]), take(sid, ["F2"])
        async with a.transaction():
            assert (await repository.take(a, first)).expires_at is not None
            verdict = await asyncio.wait_for(repository.take(b, second), 5)  # B's own transaction, committed
            assert verdict.expires_at is not None
        await numbered(db)
        held = [(e["data"]["holdId"], e["data"]["seatMapVersion"]) for e in await showtime_events(db, sid)]
        assert held == [(str(first.hold_id), 1), (str(second.hold_id), 2)]
        assert await db.fetchval("SELECT seat_map_version FROM showtime WHERE showtime_id = $1", sid) == 2
    finally:
        await a.close()
        await b.close()


async def test_a_change_is_told_and_published_only_once_numbered(start, db, hold_dsn: str) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    told: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(hold_dsn)
    await listener.add_listener("hold_seat_map", lambda *args: told.put_nowait(args[3]))
    try:
        async with numbering_held(hold_dsn) as lock:
            request = take(sid, ["F1", "F2"])
            assert (await repository.take(db, request)).expires_at is not None  # committed
            row = await db.fetchrow("SELECT id, pending, convert_from(payload, 'UTF8')::jsonb AS e FROM outbox "
                                    "WHERE message_key = $1", str(request.booking_id))
            assert row["pending"] and "seatMapVersion" not in json.loads(row["e"])["data"]
            await asyncio.sleep(0.3)
            mine = [t for t in _drain(told) if t.startswith(f"{sid}:")]
            assert mine == []  # nothing told of an unnumbered change
            claimed = await db.fetch(QUERIES.claim_batch, 10_000, 0, [])
            assert all(r["id"] < row["id"] for r in claimed)  # the relay publishes nothing at or after it
            await lock.execute("SELECT pg_advisory_unlock(seat_map_numbering_key())")
        await numbered(db)
        assert await eventually(lambda: _told(told, sid), timeout=5, interval=0.02) == [f"{sid}:1:HELD:F1,F2"]
        (event,) = await showtime_events(db, sid)
        assert event["data"]["seatMapVersion"] == 1
        assert not await db.fetchval("SELECT pending FROM outbox WHERE id = $1", row["id"])
    finally:
        await listener.close()


async def test_a_caller_of_the_previous_release_numbers_the_pending_changes_before_its_own(start, db,
                                                                                          hold_dsn: str) -> None:
    """Its release of hold B's seat comes after B's SeatsHeld, which was still pending: versions 1, 2, 3 in the
    order the changes were made (numbering its own first would have put the release before the hold of F2)."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    async with numbering_held(hold_dsn) as lock:
        first, second = take(sid, ["F1"]), take(sid, ["F2"])
        for request in (first, second):
            assert (await repository.take(db, request)).expires_at is not None  # pending
        releasing = asyncio.ensure_future(db.fetchrow("SELECT * FROM release_hold($1, 'CANCELLED', $2::text::jsonb, "
                                                      "'[]')", second.hold_id, PREVIOUS_FORM))
        await asyncio.sleep(0.3)
        assert not releasing.done()  # it waits for the numbering's lock
        await lock.execute("SELECT pg_advisory_unlock(seat_map_numbering_key())")
        released = await asyncio.wait_for(releasing, 10)
    assert released["version"] == 3  # the previous release's callers get the version itself
    versions = [(e["type"], e["data"]["seats"], e["data"]["seatMapVersion"]) for e in await showtime_events(db, sid)]
    assert versions == [("SeatsHeld", ["F1"], 1), ("SeatsHeld", ["F2"], 2), ("SeatsReleased", ["F2"], 3)]


async def test_a_showtime_s_cancellation_waits_for_the_holds_that_read_it_before(start, db, hold_dsn: str) -> None:
    """A's hold read the showtime ON_SALE (FOR KEY SHARE) and is not committed: the cancellation waits for it,
    and then lists A's hold among those it must end."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    a, b = await asyncpg.connect(hold_dsn), await asyncpg.connect(hold_dsn)
    try:
        request = take(sid, ["F1"])
        tx = a.transaction()
        await tx.start()
        assert (await repository.take(a, request)).expires_at is not None
        cancelling = asyncio.ensure_future(b.fetchval(repository.Q.cancel_showtime, sid, "projector failure"))
        waits = "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1"
        assert await eventually(lambda: db.fetchval(waits, b.get_server_pid()), timeout=10, interval=0.02)
        await tx.commit()
        assert await asyncio.wait_for(cancelling, 10) is True
        live = await db.fetch(repository.Q.live_of_showtime, sid, 10)
        assert [r["hold_id"] for r in live] == [request.hold_id]
    finally:
        await a.close()
        await b.close()


def _drain(queue: asyncio.Queue[str]) -> list[str]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


async def _told(queue: asyncio.Queue[str], sid: int) -> list[str] | None:
    return [t for t in _drain(queue) if t.startswith(f"{sid}:")] or None
