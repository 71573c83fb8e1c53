"""Scenario R7 (docs/reliability.md) for the notifier: kill -9 the worker mid-stream, restart, nothing lost or
doubled."""

from __future__ import annotations

import asyncio

import pytest
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from ticketing_testing import eventually

pytestmark = pytest.mark.integration

EVENTS = 40


async def test_kill_9_mid_stream_loses_nothing_and_duplicates_nothing(
        start_worker, publish, make_confirmed, notifier_dsn, pg_connect, new_customer_id, mail_dir):
    customer = new_customer_id()
    await upsert_all(notifier_dsn, [Contact(customer, f"c{customer}@example.com", "Crash")])
    events = [make_confirmed(customer, amount=1000 + i) for i in range(EVENTS)]
    bookings = [e.bookingId for e in events]
    conn = await pg_connect(notifier_dsn)

    async def credited() -> int:
        return int(await conn.fetchval(
            "SELECT count(*) FROM loyalty_points WHERE booking_id = ANY($1::uuid[])", bookings))

    with start_worker() as first:
        for e in events:
            await publish(e)
        await eventually(lambda: _at_least(credited, 5), timeout=60)
        first.kill()  # SIGKILL: no offset commit, no clean shutdown, possibly mid-transaction
        first.wait()
    killed_at = await credited()
    for e in events[:10]:
        await publish(e)  # a relay re-publishing after its own crash, on top of the redelivery
    with start_worker():
        await eventually(lambda: _all_sent(conn, bookings, mail_dir), timeout=90)
        await asyncio.sleep(3)  # anything that would be sent twice has time to arrive
    rows = await conn.fetch(
        "SELECT booking_id, (SELECT count(*) FROM loyalty_points p WHERE p.booking_id = b) AS points,"
        " (SELECT count(*) FROM email_outbox o WHERE o.booking_id = b AND o.status = 'SENT') AS sent"
        " FROM unnest($1::uuid[]) AS b(booking_id)", bookings)
    assert all(r["points"] == 1 and r["sent"] == 1 for r in rows), [dict(r) for r in rows]
    files = {b: sum(str(b).encode() in p.read_bytes() for p in mail_dir.glob("*.eml")) for b in bookings}
    assert set(files.values()) == {1}
    print(f"killed after {killed_at}/{EVENTS} credited; all {EVENTS} exactly once after restart")


async def _at_least(fn, n: int) -> bool:
    return await fn() >= n


async def _all_sent(conn, bookings, mail_dir) -> bool:
    sent = await conn.fetchval("SELECT count(*) FROM email_outbox WHERE booking_id = ANY($1::uuid[])"
                               " AND status = 'SENT'", bookings)
    return sent == len(bookings)
