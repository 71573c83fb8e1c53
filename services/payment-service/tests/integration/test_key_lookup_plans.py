"""A checkout's, a webhook's and a refund's statements find a payment by its key, whatever the statistics say
(sql/payments.sql lock_live_payment_of_hold, request_cancel, settle, refund_due, refund_cancelled, mark_refunded).

Their plans are made once per connection, generic. A plain status test lets the partial indexes of that status
apply (payment_pending_since, payment_one_live_per_hold, payment_paid_unconfirmed, payment_refund_due), and when
the statistics said few payments had it (a sale opening, or a showtime cancelled, after quiet hours) reading one
whole looked as cheap as the key: PostgreSQL could pick it and read every open checkout, or every refund of a
cancelled showtime, at each one. The test makes those statistics, and the plans, before the rush, on a table of its
own: a temporary `payment` (its indexes copied), which the session's unqualified name finds first (pg_temp is
searched before any schema)."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest
from payment_service.adapters.repository import QUERIES

pytestmark = pytest.mark.integration

CROWD = 2000
INSERT = ("INSERT INTO payment (payment_id, hold_id, booking_id, customer_id, showtime_id, amount_cents, status, "
          "idempotency_key, expires_at, gateway_paid_at, refund_reason, refund_due_since, refund_next_at) "
          "SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), k, 1, 100, $1, 'key-' || gen_random_uuid(), "
          "now() + interval '10 minutes', now(), $3::text, CASE WHEN $3::text IS NOT NULL THEN now() END, now() "
          "FROM generate_series(1, $2) k")


async def test_a_checkout_a_webhook_and_a_refund_read_only_their_payment(migrated_dsn: Any, kit: Any) -> None:
    conn = await asyncpg.connect(migrated_dsn("PAYMENT_DATABASE_URL", kit.MIGRATIONS))
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("CREATE TEMP TABLE payment (LIKE payment.payment INCLUDING ALL)")
        assert await conn.fetchval("SELECT 'payment'::regclass = 'pg_temp.payment'::regclass")
        await conn.execute(INSERT, "FAILED", CROWD, None)  # the quiet hours: no checkout open, no refund due
        await conn.execute("ANALYZE payment")
        for _ in range(2):  # the connection's plans, made now
            await lookups(conn)
        await conn.execute(INSERT, "PENDING", CROWD, None)  # the rush: checkouts open,
        await conn.execute(INSERT, "SUCCEEDED", CROWD, None)  # paid, not booked yet,
        await conn.execute(INSERT, "SUCCEEDED", CROWD, "SHOWTIME_CANCELLED")  # and the refunds of a cancelled showtime
        async with conn.transaction():
            before = await read(conn)
            await lookups(conn)
            assert await read(conn) - before <= 12, "a statement found by its key read other payments"
    finally:
        await conn.close()


async def lookups(conn: asyncpg.Connection) -> None:
    assert await conn.fetch(QUERIES.lock_live_payment_of_hold, uuid.uuid4()) == []
    assert await conn.fetch(QUERIES.request_cancel, uuid.uuid4()) == []
    assert await conn.fetch(QUERIES.settle, uuid.uuid4(), "SUCCEEDED") == []
    assert await conn.fetch(QUERIES.refund_due, uuid.uuid4(), "HOLD_EXPIRED") == []
    assert await conn.fetch(QUERIES.refund_cancelled, uuid.uuid4(), "SHOWTIME_CANCELLED") == []
    assert await conn.fetch(QUERIES.mark_refunded, uuid.uuid4(), "re_1") == []


async def read(conn: asyncpg.Connection) -> int:
    """Index entries of the temporary payment read in this transaction."""
    return int(await conn.fetchval("SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index "
                                   "WHERE indrelid = 'payment'::regclass"))
