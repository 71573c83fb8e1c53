"""A voucher use is found by its order or id, whatever the statistics say (sql/vouchers.sql confirm_redemption,
release_redemption, cancel_redemption, release_expired).

Their plans are made once per connection, generic. A plain status test lets the partial indexes of live or
RESERVED uses apply, and when the statistics said few uses were live (a flash sale opening after quiet hours)
reading one whole looked as cheap as the key: PostgreSQL could pick it and read every use of the sale at each
payment's outcome. The test makes those statistics, and the plans, before the rush, on a table of its own: a
temporary `voucher_redemption` (its indexes copied), which the session's unqualified name finds first (pg_temp is
searched before any schema)."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from voucher_service.adapters.repository import QUERIES

pytestmark = pytest.mark.integration

CROWD = 2000
INSERT = ("INSERT INTO voucher_redemption (voucher_code, customer_id, order_id, status, slot, per_user_limit) "
          "SELECT 'FLASH', $1 + k, gen_random_uuid()::text, $2, 0, 1 FROM generate_series(1, $3) k")


async def test_a_payments_outcome_reads_only_its_use(voucher_dsn: str) -> None:
    conn = await asyncpg.connect(voucher_dsn)
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("CREATE TEMP TABLE voucher_redemption (LIKE voucher.voucher_redemption INCLUDING ALL)")
        assert await conn.fetchval("SELECT 'voucher_redemption'::regclass = 'pg_temp.voucher_redemption'::regclass")
        await conn.execute(INSERT, 10**6, "RELEASED", CROWD)  # the quiet hours: no use live
        await conn.execute("ANALYZE voucher_redemption")
        for _ in range(2):  # the connection's plans, made now
            await lookups(conn)
        await conn.execute(INSERT, 2 * 10**6, "RESERVED", CROWD)  # the rush
        async with conn.transaction():
            before = await read(conn)
            await lookups(conn)
            assert await read(conn) - before <= 8, "a payment's outcome read other uses"
    finally:
        await conn.close()


async def lookups(conn: asyncpg.Connection) -> None:
    for statement in (QUERIES.confirm_redemption, QUERIES.release_redemption, QUERIES.cancel_redemption):
        assert await conn.fetch(statement, str(uuid.uuid4())) == []
    assert await conn.fetch(QUERIES.release_expired, [-1, -2]) == []


async def read(conn: asyncpg.Connection) -> int:
    """Index entries of the temporary voucher_redemption read in this transaction."""
    return int(await conn.fetchval("SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index "
                                   "WHERE indrelid = 'voucher_redemption'::regclass"))
