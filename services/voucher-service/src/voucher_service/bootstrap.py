"""The one composition root: builds the pool, the Redis gate, the Kafka publisher, the payment-service
client and the Context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis
from ticketing.db import create_pool

from voucher_service.adapters.gate import RedisFlashGate, redis_client
from voucher_service.adapters.payments import HttpPayments
from voucher_service.adapters.publisher import KafkaPublisher, flash_producer
from voucher_service.adapters.writer_lag import KafkaWriterLag
from voucher_service.config import VoucherSettings
from voucher_service.service_layer.context import Context, VoucherCache
from voucher_service.service_layer.unit_of_work import PgUnitOfWork


@dataclass
class Resources:
    settings: VoucherSettings
    pool: asyncpg.Pool
    redis: aioredis.Redis
    publisher: KafkaPublisher | None
    ctx: Context


@asynccontextmanager
async def resources(settings: VoucherSettings, *, with_producer: bool = True) -> AsyncIterator[Resources]:
    """Open everything for the lifetime of a process (API lifespan or worker). Kafka being down does
    not stop it: the publisher connects in the background (flash reserves answer 503 until then)."""
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min,
                             max_size=settings.db_pool_max,
                             command_timeout=max(settings.dependency_timeout_seconds * 5, 10))
    client = redis_client(settings.redis_url, settings.dependency_timeout_seconds)
    publisher = None
    if with_producer:
        publisher = KafkaPublisher(None, settings.kafka_send_timeout_seconds, factory=lambda: flash_producer(
            settings.kafka_bootstrap_servers, settings.flash_linger_ms))
        await publisher.start()
    lag = KafkaWriterLag(settings.kafka_bootstrap_servers, settings.writer_group)
    payments = HttpPayments(settings.payment_service_url, jwt_secret=settings.jwt_secret,
                            timeout=settings.dependency_timeout_seconds)
    try:
        yield Resources(settings, pool, client, publisher,
                        build_context(settings, pool, client, publisher, lag, payments))
    finally:
        if publisher is not None:
            await publisher.stop()
        await payments.close()
        await lag.close()
        await client.aclose()
        await pool.close()


def build_context(settings: VoucherSettings, pool: asyncpg.Pool, client: aioredis.Redis,
                  publisher: KafkaPublisher | None, lag: KafkaWriterLag | None,
                  payments: HttpPayments | None) -> Context:
    return Context(
        uow=lambda: PgUnitOfWork(pool),
        gate=RedisFlashGate(client, sold_out_ttl=settings.sold_out_cache_seconds),
        publisher=publisher,
        cache=VoucherCache(ttl=settings.voucher_cache_seconds),
        reservation_ttl_seconds=settings.voucher_reservation_ttl_seconds,
        writer_lag=lag,
        recovery_fence_seconds=settings.recovery_fence,
        payments=payments,
    )
