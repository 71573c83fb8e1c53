"""Waiting until the system is at rest before judging it.

At rest means, for the scope: no hold still HELD (expired ones swept), no payment still PENDING (the
reconciliation settled the missing callbacks), no voucher use RESERVED for a payment that was never recorded (a
checkout cut after its use was reserved, by a failover or a broker failing over: voucher-service's expiry
releases it after VOUCHER_RESERVATION_TTL_SECONDS), no outbox row of the scope unpublished, no e-mail pending,
and every consumer group past the end offsets read after all of that held. Checked twice in a row, so a
state that only looked settled between two hops of the saga is not taken for rest.

If rest never comes, the checker still runs and reports what did not settle: a PENDING payment that no
reconciliation resolves is itself a finding.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import asyncpg
from aiokafka.errors import KafkaError

from .offsets import KafkaView, Offsets
from .scope import Scope, Sources

PENDING = {
    "hold": "SELECT count(*) FROM booking WHERE showtime_id = ANY($1::bigint[]) AND status = 'HELD'",
    "payment": "SELECT count(*) FROM payment WHERE showtime_id = ANY($1::bigint[]) AND status = 'PENDING'",
    # Money due back (a failed or cancelled booking's) that the reconciler has not refunded yet: a gateway
    # refusing the first refunds keeps the saga moving until its retries go through.
    "refund": "SELECT count(*) FROM payment WHERE showtime_id = ANY($1::bigint[]) AND refund_reason IS NOT NULL "
              "AND status <> 'REFUNDED'",
}
KEYS = "SELECT booking_id::text FROM booking WHERE showtime_id = ANY($1::bigint[])"
UNPUBLISHED = "SELECT count(*) FROM outbox WHERE published_at IS NULL AND message_key = ANY($1::text[])"
UNSENT = "SELECT count(*) FROM email_outbox WHERE status = 'PENDING' AND booking_id = ANY($1::uuid[])"
RESERVED = ("SELECT order_id FROM voucher_redemption WHERE status = 'RESERVED' "
            "AND ($1::text[] IS NULL OR voucher_code = ANY($1::text[]))")
RECORDED = "SELECT payment_id::text FROM payment WHERE payment_id::text = ANY($1::text[])"


@dataclass
class Rest:
    reached: bool
    waited: float
    unsettled: dict[str, int] = field(default_factory=dict)  # what was still moving at the end


async def _count(dsn: str, sql: str, arg: list[object]) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(sql, arg))
    finally:
        await conn.close()


async def _uses_of_no_payment(scope: Scope, sources: Sources) -> int:
    """RESERVED uses of the scope's vouchers whose orderId is no payment (yet: one being recorded counts once)."""
    conn = await asyncpg.connect(sources.dsn["voucher"])
    try:
        codes = None if scope.vouchers is None else sorted(scope.vouchers)  # None: every voucher
        orders = [r[0] for r in await conn.fetch(RESERVED, codes)]
    finally:
        await conn.close()
    if not orders:
        return 0
    conn = await asyncpg.connect(sources.dsn["payment"])
    try:
        recorded = {r[0] for r in await conn.fetch(RECORDED, orders)}
    finally:
        await conn.close()
    return len(set(orders) - recorded)


async def _unsettled(scope: Scope, sources: Sources) -> dict[str, int]:
    dsn, showtimes = sources.dsn, sorted(scope.showtimes or ())
    conn = await asyncpg.connect(dsn["hold"])
    try:
        bookings = [r[0] for r in await conn.fetch(KEYS, showtimes)]
    finally:
        await conn.close()
    keys = bookings + [f"showtime:{s}" for s in showtimes]  # outbox keys: ShowtimeCancelled is the showtime's
    counts = {
        "holds HELD": await _count(dsn["hold"], PENDING["hold"], showtimes),
        "payments PENDING": await _count(dsn["payment"], PENDING["payment"], showtimes),
        "refunds due": await _count(dsn["payment"], PENDING["refund"], showtimes),
        "hold outbox unpublished": await _count(dsn["hold"], UNPUBLISHED, keys),
        "payment outbox unpublished": await _count(dsn["payment"], UNPUBLISHED, keys),
        "e-mails pending": await _count(dsn["notifier"], UNSENT, bookings),
        "voucher uses of no payment": await _uses_of_no_payment(scope, sources),
    }
    return {k: v for k, v in counts.items() if v}


async def wait_for_rest(scope: Scope, sources: Sources, timeout: float) -> Rest:
    started = time.monotonic()
    deadline, calm = started + timeout, 0
    unsettled: dict[str, int] = {}
    async with KafkaView(sources.bootstrap) as kafka:
        while time.monotonic() < deadline:
            unsettled = await _unsettled(scope, sources)
            if not unsettled:
                # A fixed target: other runs keep publishing to the shared topics, so "lag = 0 against the
                # moving end" may never be seen; passing what existed once the databases were settled is exact.
                targets = {topic: await kafka.end_offsets(topic) for topic in sources.groups}
                unsettled = await _lagging(kafka, sources.groups, targets, deadline)
            calm = 0 if unsettled else calm + 1
            if calm == 2:
                return Rest(True, time.monotonic() - started)
            await asyncio.sleep(1.0)
    return Rest(False, time.monotonic() - started, unsettled)


async def _lagging(kafka: KafkaView, groups: dict[str, list[str]], targets: dict[str, Offsets],
                   deadline: float) -> dict[str, int]:
    while True:
        try:
            lags = {f"lag {g}": n for g, n in (await kafka.lags(groups, targets)).items() if n}
        except KafkaError as exc:  # the shared broker restarting: ask again until the deadline
            lags = {repr(exc): 1}
        if not lags or time.monotonic() >= deadline:
            return lags
        await asyncio.sleep(0.5)
