"""Best available's choosing statement (sql choose_seats) interleaved with another transaction on two
connections, as test_interleavings.py runs the hold paths: A chooses (or takes) and stays open; B chooses and
must neither wait for A's locks nor choose a seat A is deciding, nor, under the no-lone-seat rule, leave a
seat alone beside A's (it then locks two seats either side of its run, so it passes over more)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest
from hold_service.adapters import repository
from hold_service.domain.model import TakeSeats

pytestmark = pytest.mark.integration


class Tx:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn, self.tx = conn, conn.transaction()

    async def __aenter__(self) -> Tx:
        await self.tx.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.conn.is_in_transaction():
            await self.tx.rollback()


@pytest.fixture
async def two(hold_dsn: str) -> Any:
    a, b = await asyncpg.connect(hold_dsn), await asyncpg.connect(hold_dsn)
    yield Tx(a), Tx(b)
    await a.close()
    await b.close()


async def choose(tx: Tx, sid: int, count: int = 2) -> list[str]:
    """B's choice must not wait on A: a statement that blocked would time out here."""
    got = await asyncio.wait_for(tx.conn.fetchval(repository.Q.choose_seats, sid, count, "STANDARD", True, 50), 5)
    return sorted(got)


def take(sid: int, seats: list[str]) -> TakeSeats:
    return TakeSeats(showtime_id=sid, seats=sorted(seats), hold_id=uuid.uuid4(),
                     customer_id=uuid.uuid4().int % 10**12, ttl_seconds=60, booking_id=uuid.uuid4(), cap=8)


async def test_two_choices_at_once_pass_over_each_others_run(start, two) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 10})
    a, b = two
    async with a, b:
        first = await choose(a, sid)
        assert first == ["F5", "F6"]  # the row's centre
        second = await choose(b, sid)  # F5-F6 are A's to decide: the next run
        assert second in (["F3", "F4"], ["F7", "F8"]), second
        for tx, seats in ((a, first), (b, second)):
            assert (await repository.take(tx.conn, take(sid, seats))).expires_at is not None
            await tx.tx.commit()


async def test_a_choice_passes_over_a_picked_hold_still_deciding(start, db, two) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 10})
    a, b = two
    async with a, b:
        assert (await repository.take(a.conn, take(sid, ["F6"]))).expires_at is not None  # open: F6 locked
        chosen = await choose(b, sid)
        assert chosen in (["F4", "F5"], ["F7", "F8"]), chosen  # F5-F6 passed over, not waited for
        await a.tx.rollback()
        await b.tx.rollback()
    assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1", sid) == 0


async def test_under_the_rule_a_choice_beside_an_open_one_leaves_no_lone_seat(start, db, two) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(layout=[{"row": "F", "blocks": [{"from": 1, "to": 5}]}], noLoneSeat=True)
    a, b = two
    async with a, b:
        first = await choose(a, sid)
        assert first in (["F1", "F2"], ["F4", "F5"])  # F2-F3 or F3-F4 would leave a seat alone
        assert (await repository.take(a.conn, take(sid, first))).expires_at is not None
        assert await choose(b, sid) == []  # every run touches A's seats or their neighbours: not waited for
        await a.tx.commit()
        # A committed: the pair left would strand the third seat, so there is none; three fit
        assert await choose(b, sid) == []
        rest = await choose(b, sid, 3)
        assert rest == sorted({"F1", "F2", "F3", "F4", "F5"} - set(first))
        await b.tx.rollback()
    assert await db.fetchval("SELECT lone_seats($1, $2::text[])", sid, []) == []


async def test_under_the_rule_two_picked_holds_at_once_leave_no_lone_seat(start, db, two) -> None:
    """A picks F3 and stays open; B picks F5. Each alone strands nobody, both would strand F4. B waits for the seats
    A locked beside F3 (sql lock_beside), then decides on what A committed: refused, F4 named."""
    async with start() as svc:
        sid = await svc.showtime_of(layout=[{"row": "F", "blocks": [{"from": 1, "to": 7}]}], noLoneSeat=True)
    a, b = two
    async with a, b:
        assert (await repository.take(a.conn, take(sid, ["F3"]))).expires_at is not None
        second = asyncio.create_task(repository.take(b.conn, take(sid, ["F5"])))
        await asyncio.sleep(0.3)
        assert not second.done()  # B waits for A's decision, not for a snapshot taken before it
        await a.tx.commit()
        verdict = await asyncio.wait_for(second, 5)
        assert verdict.expires_at is None and verdict.lone == ("F4",)
        await b.tx.commit()
    assert await db.fetchval("SELECT lone_seats($1, $2::text[])", sid, []) == []
    assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1", sid) == 1
