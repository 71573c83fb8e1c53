"""Statements that find bookings by a key read those bookings, whatever the statistics say: the cap's count
(sql/schema.sql seats_held, at every hold's COMMIT; migration 0018), a release (release_holds) and an extension
(sql/holds.sql extend_hold).

Their plans are made once per connection, generic (bootstrap.py). A plain `status = 'HELD'` test lets the partial
indexes of HELD bookings apply, and when the statistics said few bookings were HELD (a sale opening after quiet
hours) reading one of them whole looked as cheap as the key: PostgreSQL could pick it and read every hold in the
database each time. Each test makes those statistics, and the plan, before the rush, on a table of its own: a
temporary `booking` (its indexes copied), which the session's unqualified name finds first (pg_temp is searched
before any schema)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
import pytest_asyncio
from hold_service.adapters.repository import FORM, Q

pytestmark = pytest.mark.integration

CROWD = 2000
EXTEND = (datetime.now(UTC) + timedelta(minutes=5), 600, 0.0)  # extend_hold's until, longest and sales' close
INSERT = ("INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status, "
          "expires_at, created_at) SELECT gen_random_uuid(), gen_random_uuid(), $1 + k, $2, ARRAY['A1', 'A2'], 100, "
          "$3, now() + interval '10 minutes', now() FROM generate_series(1, $4) k")


@pytest_asyncio.fixture
async def quiet(hold_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection whose `booking` is a temporary one analysed with a history and no hold (the quiet hours)."""
    conn = await asyncpg.connect(hold_dsn)
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("CREATE TEMP TABLE booking (LIKE hold.booking INCLUDING ALL)")
        assert await conn.fetchval("SELECT 'booking'::regclass = 'pg_temp.booking'::regclass")
        await conn.execute(INSERT, 10**6, 7, "RELEASED", CROWD)
        await conn.execute("ANALYZE booking")
        yield conn
    finally:
        await conn.close()


async def rush(conn: asyncpg.Connection) -> None:
    await conn.execute(INSERT, 2 * 10**6, 8, "HELD", CROWD)


async def read(conn: asyncpg.Connection) -> int:
    """Index entries of the temporary booking read in this transaction (the statements read the table through one
    index or another; a sequential scan of CROWD rows would cost more than any)."""
    return int(await conn.fetchval("SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index "
                                   "WHERE indrelid = 'booking'::regclass"))


async def test_the_cap_count_reads_only_the_customers_bookings(quiet: asyncpg.Connection) -> None:
    await quiet.execute(INSERT, 42 - 1, 8, "HELD", 1)  # the sale opens: customer 42 holds two seats
    assert await quiet.fetchval("SELECT seats_held(42, 8)") == 2  # the connection's plan, made now
    await rush(quiet)
    async with quiet.transaction():
        before = await read(quiet)
        assert await quiet.fetchval("SELECT seats_held(42, 8)") == 2
        assert await quiet.fetchval("SELECT seats_held(43, 8)") == 0
        assert await read(quiet) - before <= 4, "the cap's count read other customers' bookings"


async def test_a_release_and_an_extension_read_only_their_hold(quiet: asyncpg.Connection) -> None:
    release = "SELECT count(*) FROM release_holds($1::uuid[], 'CANCELLED', $2::text::jsonb, '[]'::jsonb)"
    for _ in range(2):  # the connection's plans, made before the rush
        assert await quiet.fetchval(release, [uuid.uuid4()], FORM) == 0
        assert await quiet.fetch(Q.extend_hold, uuid.uuid4(), *EXTEND) == []
    await rush(quiet)
    async with quiet.transaction():
        before = await read(quiet)
        assert await quiet.fetchval(release, [uuid.uuid4(), uuid.uuid4()], FORM) == 0
        assert await quiet.fetch(Q.extend_hold, uuid.uuid4(), *EXTEND) == []
        assert await read(quiet) - before <= 6, "a release or an extension read other holds"
