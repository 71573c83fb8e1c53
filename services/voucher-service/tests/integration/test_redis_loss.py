"""R4: Redis loses its data mid-sale (FLUSHDB on a dedicated logical db): no customer told 201 without a
use (the gate reopens only once Postgres holds every use the lost gate admitted), no DLQ'd oversell,
no oversell, recovery time reported."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer
from ticketing.events import VOUCHER_RESERVED_DLQ
from ticketing.redis_client import redis_client
from ticketing.settings import ServiceSettings
from ticketing_testing.workers import own_redis_db
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.adapters.writer_lag import KafkaWriterLag
from voucher_service.service_layer.jobs import reconcile
from voucher_testkit import assert_invariant, make_deps, new_voucher, reserve_retrying, used_once_quiet

from conftest import SEND_TIMEOUT

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture
async def r4_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = redis_client(ServiceSettings(redis_url=own_redis_db(redis_url, 1)), 2.0, retry_dropped=True)
    yield client
    await client.aclose()


async def _dlq_at_end(bootstrap: str) -> AIOKafkaConsumer:
    dlq = AIOKafkaConsumer(VOUCHER_RESERVED_DLQ, bootstrap_servers=bootstrap, group_id=None,
                           auto_offset_reset="latest")
    await dlq.start()
    await dlq.seek_to_end()
    await dlq.getmany(timeout_ms=200)
    return dlq


async def _dead_lettered(dlq: AIOKafkaConsumer, code: str) -> int:
    """VoucherReserved messages of this voucher the writer sent to the DLQ since `_dlq_at_end`."""
    found = 0
    try:
        for _ in range(4):
            for records in (await dlq.getmany(timeout_ms=500)).values():
                found += sum(1 for r in records if f'"{code}"'.encode() in r.value)
    finally:
        await dlq.stop()
    return found


async def test_r4_flush_mid_sale_no_false_201_no_oversell(pool: asyncpg.Pool, r4_redis: aioredis.Redis,
                                                          publisher: KafkaPublisher, reserved_consumer: None,
                                                          writer_lag: KafkaWriterLag, kafka_bootstrap: str) -> None:
    deps = make_deps(pool, r4_redis, publisher, writer_lag=writer_lag, recovery_fence_seconds=SEND_TIMEOUT)
    limit = 60
    code = await new_voucher(deps, limit=limit, flash=True)
    dlq = await _dlq_at_end(kafka_bootstrap)
    before = await asyncio.gather(*(reserve_retrying(deps, code) for _ in range(40)))
    flushed = time.monotonic()
    await r4_redis.flushdb()  # FLUSHALL's effect, confined to this test's logical db
    # Right after the loss the 40 uses are in flight: in neither Redis nor (yet) Postgres. 200 more
    # customers arrive at once and keep retrying on 503 for up to 30 s.
    first_ok: list[float] = []

    async def customer() -> tuple[str, str]:
        outcome = await reserve_retrying(deps, code, retry_for=30.0)
        if outcome[0] == "ok":
            first_ok.append(time.monotonic() - flushed)
        return outcome
    after = await asyncio.gather(*(customer() for _ in range(200)))
    used = await used_once_quiet(pool, code)
    dead = await _dead_lettered(dlq, code)
    promised = [order for outcome, order in before + after if outcome == "ok"]
    rows = await pool.fetch("SELECT order_id FROM voucher_redemption WHERE voucher_code = $1 "
                            "AND status IN ('RESERVED', 'CONFIRMED')", code)
    false_201 = set(promised) - {r["order_id"] for r in rows}
    outcomes = {name: [o for o, _ in after].count(name) for name in {o for o, _ in after}}
    print(f"R4: 201s={len(promised)} false_201={len(false_201)} used_count={used} limit={limit} "
          f"dlq={dead} after_flush={outcomes} recovery_s={min(first_ok, default=float('nan')):.2f}")
    assert [o for o, _ in before].count("ok") == 40
    assert not false_201, f"{len(false_201)} customers were told 201 without a use in Postgres"
    assert used == await assert_invariant(pool, code) and used <= limit  # oversell = 0
    assert dead == 0, "reservations refused by ck_used (DLQ)"
    assert first_ok, "the gate never reopened"
    assert len(promised) == limit and outcomes.get("OutOfStock") == 200 - (limit - 40)  # no use lost
    assert await reconcile(code, deps) == 0  # the reloaded gate agrees with Postgres
    ttl = await r4_redis.ttl(f"voucher:{{{code}}}:remaining")
    assert 0 < ttl <= 3600 + 86400 and await r4_redis.ttl(f"voucher:{{{code}}}:orders") > 0
