"""A checkout's and a webhook's statements find a payment by its key, whatever the statistics say
(sql/payments.sql lock_live_payment_of_hold, request_cancel, settle).

Their plans are made once per connection, generic. A plain `status = 'PENDING'` test lets the partial index
payment_pending_since apply, and when the statistics said few payments were PENDING (a sale opening after quiet
hours) reading it whole looked as cheap as the key: PostgreSQL could pick it and read every open checkout at each
one. The test makes those statistics, and the plans, before the rush, on a table of its own: a temporary `payment`
(its indexes copied), which the session's unqualified name finds first (pg_temp is searched before any schema)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
from payment_service.adapters.repository import QUERIES

pytestmark = pytest.mark.integration

CROWD = 2000
INSERT = ("INSERT INTO payment (payment_id, hold_id, booking_id, customer_id, showtime_id, amount_cents, status, "
          "idempotency_key, expires_at) SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), k, 1, 100, $1, "
          "'key-' || gen_random_uuid(), now() + interval '10 minutes' FROM generate_series(1, $2) k")


async def test_a_checkout_and_a_webhook_read_only_their_payment(migrated_dsn: Any, kit: Any) -> None:
    conn = await asyncpg.connect(migrated_dsn("PAYMENT_DATABASE_URL", kit.MIGRATIONS))
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("CREATE TEMP TABLE payment (LIKE payment.payment INCLUDING ALL)")
        assert await conn.fetchval("SELECT 'payment'::regclass = 'pg_temp.payment'::regclass")
        await conn.execute(INSERT, "FAILED", CROWD)  # the quiet hours: no checkout open
        await conn.execute("ANALYZE payment")
        for _ in range(2):  # the connection's plans, made now
            await lookups(conn)
        await conn.execute(INSERT, "PENDING", CROWD)  # the rush
        async with conn.transaction():
            before = await read(conn)
            await lookups(conn)
            assert await read(conn) - before <= 6, "a checkout's or a webhook's statement read other payments"
    finally:
        await conn.close()


async def lookups(conn: asyncpg.Connection) -> None:
    assert await conn.fetch(QUERIES.lock_live_payment_of_hold, uuid.uuid4()) == []
    assert await conn.fetch(QUERIES.request_cancel, uuid.uuid4()) == []
    assert await conn.fetch(QUERIES.settle, uuid.uuid4(), "SUCCEEDED") == []


async def read(conn: asyncpg.Connection) -> int:
    """Index entries of the temporary payment read in this transaction."""
    return int(await conn.fetchval("SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index "
                                   "WHERE indrelid = 'payment'::regclass"))
