"""R4: Redis loses its data mid-sale (FLUSHDB on a dedicated logical db): no oversell, recovery by warm-up."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from voucher_service.adapters.gate import redis_client
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.domain.errors import VoucherError
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.handlers import reserve_voucher
from voucher_service.service_layer.jobs import reconcile
from voucher_testkit import assert_invariant, invariant, make_ctx, new_voucher, unique_customer

pytestmark = pytest.mark.integration
R4_DB = 14


@pytest_asyncio.fixture
async def r4_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = redis_client(redis_url.rsplit("/", 1)[0] + f"/{R4_DB}", 2.0)
    yield client
    await client.aclose()


async def _reserve(ctx: Context, code: str) -> str:
    try:
        await reserve_voucher(ReserveVoucher(code, unique_customer(), str(uuid.uuid4()), 1000), ctx)
        return "ok"
    except VoucherError as exc:
        return type(exc).__name__


async def _stable(pool: asyncpg.Pool, code: str, quiet: float = 3.0, timeout: float = 40.0) -> int:
    """Wait until the consumer stops changing used_count (the in-flight messages have landed)."""
    last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        used = (await invariant(pool, code))[0]
        if used != last:
            last, since = used, time.monotonic()
        elif time.monotonic() - since > quiet:
            return used
        await asyncio.sleep(0.2)
    return last


async def test_r4_flush_mid_sale_no_oversell_and_recovery(pool: asyncpg.Pool, r4_redis: aioredis.Redis,
                                                          publisher: KafkaPublisher,
                                                          reserved_consumer: None) -> None:
    ctx = make_ctx(pool, r4_redis, publisher)
    limit = 60
    code = await new_voucher(ctx, limit=limit, flash=True)
    before = await asyncio.gather(*(_reserve(ctx, code) for _ in range(40)))
    started = time.monotonic()
    await r4_redis.flushdb()  # FLUSHALL's effect, confined to this test's logical db
    # Immediately after the loss the in-flight messages are in neither Redis nor (yet) Postgres.
    after = await asyncio.gather(*(_reserve(ctx, code) for _ in range(200)))
    recovered_in = time.monotonic() - started
    used = await _stable(pool, code)
    ok = before.count("ok") + after.count("ok")
    assert before.count("ok") == 40
    assert after.count("ok") >= 1, "the gate did not recover by warm-up"
    assert used == await assert_invariant(pool, code) and used <= limit  # oversell = 0 in the database
    drift = await reconcile(code, ctx)
    print(f"R4: 201s={ok} used_count={used} limit={limit} refused_by_ck_used={ok - used} "
          f"recovery_s={recovered_in:.2f} drift_after={drift}")
