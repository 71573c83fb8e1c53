"""Scenario R2 (docs/reliability.md): hold/hold, hold/sweeper, confirm/expiry and confirm/cancel, each permutation
run for real on two connections (isolationtester's way): transaction A does its step and stays open; B starts its
step and the test waits until Postgres shows B blocked on A's lock (pg_stat_activity), or sees it finish when it
needs no lock of A's; then A commits (or rolls back) and B's outcome, the rows and the events are checked. Every
statement is the service's own (sql/holds.sql, sql/schema.sql)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from hold_service.adapters import repository
from hold_service.adapters.repository import PgHoldRepository, PgHoldsUnitOfWork
from hold_service.domain.commands import ConfirmBooking
from hold_service.domain.model import TakeSeats, Verdict
from hold_service.service_layer.lifecycle import confirm_booking
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration

SWEEP_THIS = """
SELECT r.* FROM (SELECT hold_id FROM booking WHERE hold_id = $1 AND status = 'HELD' AND expires_at < now()
                 FOR UPDATE SKIP LOCKED) c,
                LATERAL release_hold(c.hold_id, 'EXPIRED', $2::text::jsonb, '[]') r"""  # sweep_expired, on one hold


class Tx:
    """One connection with an explicitly open transaction."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.tx = conn.transaction()

    async def __aenter__(self) -> Tx:
        await self.tx.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.conn.is_in_transaction():  # neither committed nor rolled back by the test
            await self.tx.rollback()

    @property
    def pid(self) -> int:
        return int(self.conn.get_server_pid())


@pytest.fixture
async def two(hold_dsn: str) -> Any:
    a, b = await asyncpg.connect(hold_dsn), await asyncpg.connect(hold_dsn)
    yield Tx(a), Tx(b)
    await a.close()
    await b.close()


async def waits_for_lock(db: asyncpg.Connection, pid: int) -> bool:
    return bool(await db.fetchval("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid))


async def blocked_then(db: asyncpg.Connection, b: Tx, step: Awaitable[Any],
                       release: Callable[[], Awaitable[Any]]) -> Any:
    """Start B's `step`, see it wait on a lock, run `release` (A's commit or rollback), return B's result."""
    task = asyncio.ensure_future(step)
    await eventually(lambda: waits_for_lock(db, b.pid), timeout=10, interval=0.02)
    assert not task.done()
    await release()
    return await asyncio.wait_for(task, 10)


def take(sid: int, seats: list[str], ttl: float = 60) -> TakeSeats:
    return TakeSeats(showtime_id=sid, seats=seats, hold_id=uuid.uuid4(), customer_id=uuid.uuid4().int % 10**12,
                     ttl_seconds=ttl, booking_id=uuid.uuid4(), cap=8)


async def hold(db: asyncpg.Connection, sid: int, seats: list[str], ttl: float = 60) -> TakeSeats:
    request = take(sid, seats, ttl)
    assert (await repository.take(db, request)).expires_at is not None
    return request


async def expire(db: asyncpg.Connection, hold_id: uuid.UUID) -> None:
    """Its time passed (without a test that sleeps through a TTL)."""
    await db.execute("UPDATE booking SET expires_at = now() - interval '1 second' WHERE hold_id = $1", hold_id)
    await db.execute("UPDATE show_seat SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1", hold_id)


async def events(db: asyncpg.Connection, sid: int) -> list[tuple[str, list[str], int]]:
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8')::jsonb AS e FROM outbox ORDER BY id DESC LIMIT 300")
    found = [json.loads(r["e"]) for r in rows]
    mine = [e for e in found if e["showtimeId"] == sid and "seatMapVersion" in e["data"]]
    return sorted(((e["type"], e["data"].get("seats", []), e["data"]["seatMapVersion"]) for e in mine),
                  key=lambda t: t[2])


async def owner(db: asyncpg.Connection, sid: int, seat: str) -> tuple[str, uuid.UUID | None]:
    row = await db.fetchrow("SELECT status, hold_id FROM show_seat WHERE showtime_id = $1 AND seat_code = $2",
                            sid, seat)
    return row["status"], row["hold_id"]


@pytest.mark.parametrize("a_ends", ["commit", "rollback"])
async def test_hold_hold_on_one_seat(start, db, two, a_ends: str) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    a, b = two
    first, second = take(sid, ["F1", "F2"]), take(sid, ["F2", "F3"])
    async with a, b:
        assert (await repository.take(a.conn, first)).expires_at is not None
        verdict: Verdict = await blocked_then(db, b, repository.take(b.conn, second), getattr(a.tx, a_ends))
        await b.tx.commit()
    if a_ends == "commit":
        assert (verdict.taken, verdict.expires_at) == (["F2"], None)
        assert await owner(db, sid, "F3") == ("AVAILABLE", None)
        assert [t for t, _, _ in await events(db, sid)] == ["SeatsHeld"]
    else:
        assert verdict.expires_at is not None
        assert await owner(db, sid, "F2") == ("HELD", second.hold_id)
        assert await events(db, sid) == [("SeatsHeld", ["F2", "F3"], 1)]


async def test_hold_then_sweeper_on_an_expired_holds_seat(start, db, two) -> None:
    """A re-holds a seat of expired hold X (lazy expiry) and stays open; the sweeper claims X and waits
    for the seat; A commits: the sweeper frees only what X still held, so each seat is released once."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1", "F2"])
    await expire(db, x.hold_id)
    a, b = two
    again = take(sid, ["F2", "F3"])
    async with a, b:
        assert (await repository.take(a.conn, again)).expires_at is not None
        swept = await blocked_then(db, b, b.conn.fetchrow(SWEEP_THIS, x.hold_id, repository.FORM), a.tx.commit)
        await b.tx.commit()
    assert (swept["reason"], list(swept["freed"])) == ("EXPIRED", ["F1"])
    assert await owner(db, sid, "F2") == ("HELD", again.hold_id)
    assert await owner(db, sid, "F1") == ("AVAILABLE", None)
    assert await events(db, sid) == [("SeatsHeld", ["F1", "F2"], 1), ("SeatsReleased", ["F2"], 2),
                                     ("SeatsHeld", ["F2", "F3"], 3), ("SeatsReleased", ["F1"], 4)]


async def test_sweeper_then_hold_on_an_expired_holds_seat(start, db, two) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1", "F2"])
    await expire(db, x.hold_id)
    a, b = two
    again = take(sid, ["F2", "F3"])
    async with a, b:
        swept = await a.conn.fetchrow(SWEEP_THIS, x.hold_id, repository.FORM)
        assert list(swept["freed"]) == ["F1", "F2"]
        verdict = await blocked_then(db, b, repository.take(b.conn, again), a.tx.commit)
        await b.tx.commit()
    assert verdict.expires_at is not None
    assert await events(db, sid) == [("SeatsHeld", ["F1", "F2"], 1), ("SeatsReleased", ["F1", "F2"], 2),
                                     ("SeatsHeld", ["F2", "F3"], 3)]


@pytest.mark.parametrize("first", ["confirm", "sweeper"])
async def test_confirm_and_expiry(start, db, two, first: str) -> None:
    """The payment's transaction began while the hold was live; the hold's time then passes and the sweeper
    comes. Whoever locks the booking row first decides: a confirm that got it books (the sweeper skips a
    locked hold), a sweeper that got it expires the hold and the payment gets BookingFailed."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1"], ttl=1.5)
    a, b = two
    async with a:  # A's clock (now()) is the start of its transaction: before the hold's expiry
        uow, cmd = PgHoldsUnitOfWork(conn=a.conn), ConfirmBooking(x.booking_id, uuid.uuid4(), 1200)
        await asyncio.sleep(1.7)  # the hold's time passes
        async with b:  # the sweeper's transaction begins after it
            if first == "confirm":
                assert await confirm_booking(cmd, uow) == "confirmed"
                assert await b.conn.fetchrow(SWEEP_THIS, x.hold_id, repository.FORM) is None  # skipped: A has it locked
                await a.tx.commit()
                await b.tx.commit()
            else:
                assert list((await b.conn.fetchrow(SWEEP_THIS, x.hold_id, repository.FORM))["freed"]) == ["F1"]
                outcome = await blocked_then(db, a, confirm_booking(cmd, uow), b.tx.commit)
                await a.tx.commit()
                assert outcome == "HOLD_EXPIRED"
    assert await owner(db, sid, "F1") == (("BOOKED", x.hold_id) if first == "confirm" else ("AVAILABLE", None))


@pytest.mark.parametrize("first", ["confirm", "cancel"])
async def test_confirm_and_cancel(start, db, two, first: str) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1", "F2"])
    a, b = two
    cmd = ConfirmBooking(x.booking_id, uuid.uuid4(), 2400)
    async with a, b:
        if first == "confirm":
            assert await confirm_booking(cmd, PgHoldsUnitOfWork(conn=a.conn)) == "confirmed"
            released = await blocked_then(db, b, PgHoldRepository(b.conn).release(x.hold_id, "CANCELLED"), a.tx.commit)
            await b.tx.commit()
            assert released is None  # the cancel finds it booked: the API answers 409
            assert await owner(db, sid, "F1") == ("BOOKED", x.hold_id)
        else:
            assert (await PgHoldRepository(a.conn).release(x.hold_id, "CANCELLED")) is not None
            uow = PgHoldsUnitOfWork(conn=b.conn)
            outcome = await blocked_then(db, b, confirm_booking(cmd, uow), a.tx.commit)
            await b.tx.commit()
            assert outcome == "HOLD_RELEASED"
            assert await owner(db, sid, "F1") == ("AVAILABLE", None)


async def test_a_hold_that_decided_before_its_showtime_was_cancelled_is_not_written(start, db, two) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    a, b = two
    async with a, b:
        assert await a.conn.fetchval(repository.Q.cancel_showtime, sid, "projector failure") is True

        async def hold_in_b() -> Any:
            try:
                return await repository.take(b.conn, take(sid, ["F1"]))
            except Exception as exc:
                return exc
        refused = await blocked_then(db, b, hold_in_b(), a.tx.commit)
        assert type(refused).__name__ == "ShowtimeClosed", refused
    assert await owner(db, sid, "F1") == ("AVAILABLE", None)
    assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1", sid) == 0


async def test_a_payment_applied_as_its_showtime_is_cancelled_releases_the_hold(start, db, two) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    request = await hold(db, sid, ["F1", "F2"])
    a, b = two
    async with a, b:
        assert await a.conn.fetchval(repository.Q.cancel_showtime, sid, "projector failure") is True
        payment = uuid.uuid4()
        step = confirm_booking(ConfirmBooking(request.booking_id, payment, 2400), PgHoldsUnitOfWork(conn=b.conn))
        assert await blocked_then(db, b, step, a.tx.commit) == "HOLD_RELEASED"
        await b.tx.commit()
    assert [await owner(db, sid, s) for s in ("F1", "F2")] == [("AVAILABLE", None)] * 2
    kinds = [(t, seats) for t, seats, _ in await events(db, sid)]
    assert kinds == [("SeatsHeld", ["F1", "F2"]), ("SeatsReleased", ["F1", "F2"])]  # never booked


@pytest.mark.parametrize("statement", ["take", "take_together"])
async def test_a_hold_waiting_on_a_seat_being_released_gets_all_its_seats(start, db, two, statement: str) -> None:
    """A releases hold X and stays open; B's hold of X's seat and a free one starts (its snapshot still shows the
    seat HELD) and waits for the seat's lock; A commits. B decides on the rows it locked, which show the seat free,
    so it must write all of its seats: its write once skipped the seat as its snapshot saw it (a 500, "a hold got
    part of its seats", in R16 while an API was killed)."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1"])
    a, b = two
    again = take(sid, ["F1", "F2"])
    async with a, b:
        assert await PgHoldRepository(a.conn).release(x.hold_id, "CANCELLED") is not None
        step = (repository.take(b.conn, again) if statement == "take" else
                repository.take_together(b.conn, sid, [(again, "[]")]))
        outcome = await blocked_then(db, b, step, a.tx.commit)
        await b.tx.commit()
    verdict = outcome if statement == "take" else outcome[again.hold_id]
    assert verdict is not None and verdict.expires_at is not None
    assert [await owner(db, sid, s) for s in ("F1", "F2")] == [("HELD", again.hold_id)] * 2
    assert [(t, s) for t, s, _ in await events(db, sid)] == [("SeatsHeld", ["F1"]), ("SeatsReleased", ["F1"]),
                                                           ("SeatsHeld", ["F1", "F2"])]


async def test_an_extension_that_meets_its_seat_retaken_at_the_expiry_is_refused(start, db, two) -> None:
    """B's extension began while hold X was live (its clock is its transaction's start); X's time then passes,
    A takes X's seat (lazy expiry) and stays open; B's extension waits for the seat's lock; A commits. X lost its
    seat, so X is not live any more: the extension is refused (no row, 409 to the checkout), not a 500."""
    async with start() as svc:
        sid = await svc.showtime({"F": 4})
    x = await hold(db, sid, ["F1"])
    a, b = two
    again = take(sid, ["F1"])
    async with b:
        await b.conn.fetchval("SELECT now()")  # B's clock starts here
        for table in ("booking", "show_seat"):
            await db.execute(f"UPDATE {table} SET {'expires_at' if table == 'booking' else 'hold_expires_at'} = "
                             "now() + interval '0.3 seconds' WHERE hold_id = $1", x.hold_id)
        await asyncio.sleep(0.5)
        async with a:
            assert (await repository.take(a.conn, again)).expires_at is not None
            until = datetime.now(UTC) + timedelta(seconds=120)
            extended = await blocked_then(db, b, PgHoldRepository(b.conn).extend(x.hold_id, until, 600), a.tx.commit)
        await b.tx.commit()
    assert extended is None
    assert await owner(db, sid, "F1") == ("HELD", again.hold_id)
