"""The per-customer cap's count (sql/schema.sql seats_held, run at every hold's COMMIT) reads the customer's bookings
of the showtime, whatever the statistics say (migration 0018).

Its plan is made once per connection, generic (bootstrap.py). With `status = 'HELD'` in its WHERE, the partial
indexes of HELD bookings applied too, and when the statistics said few bookings were HELD (a sale opening after
quiet hours) they cost the same as the customer's index: PostgreSQL could pick one and read every hold in the
database at each hold's COMMIT. The test makes those statistics, and the plan, before the rush, on a table of its
own: a temporary `booking` (its indexes copied), which the session's unqualified name finds first (pg_temp is
searched before the schema)."""

from __future__ import annotations

import asyncpg
import pytest

pytestmark = pytest.mark.integration

CROWD = 2000


async def test_the_cap_count_reads_only_the_customers_bookings(hold_dsn: str) -> None:
    conn = await asyncpg.connect(hold_dsn)
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("CREATE TEMP TABLE booking (LIKE hold.booking INCLUDING ALL)")
        assert await conn.fetchval("SELECT 'booking'::regclass = 'pg_temp.booking'::regclass")
        insert = ("INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status, "
                  "expires_at) SELECT gen_random_uuid(), gen_random_uuid(), $1 + k, $2, ARRAY['A1', 'A2'], 100, $3, "
                  "now() + interval '10 minutes' FROM generate_series(1, $4) k")
        await conn.execute(insert, 10**6, 7, "RELEASED", CROWD)  # the quiet hours: nobody holds anything
        await conn.execute("ANALYZE booking")
        await conn.execute(insert, 42 - 1, 8, "HELD", 1)  # the sale opens: customer 42 holds two seats
        assert await conn.fetchval("SELECT seats_held(42, 8)") == 2  # the connection's plan, made now
        await conn.execute(insert, 2 * 10**6, 8, "HELD", CROWD)  # then the rush
        async with conn.transaction():
            before = await read(conn)
            assert await conn.fetchval("SELECT seats_held(42, 8)") == 2
            assert await conn.fetchval("SELECT seats_held(43, 8)") == 0
            assert await read(conn) - before <= 4, "the cap's count read other customers' bookings"
    finally:
        await conn.close()


async def read(conn: asyncpg.Connection) -> int:
    """Index entries of the temporary booking read in this transaction (the count's plan reads the table through
    one index or another; a sequential scan of CROWD rows would cost more than any)."""
    return int(await conn.fetchval("SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index "
                                   "WHERE indrelid = 'booking'::regclass"))
