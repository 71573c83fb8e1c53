"""The one composition root: builds the pool, the Redis gate, the Kafka publisher and the Context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer
from ticketing.db import create_pool
from ticketing.kafka import idempotent_producer

from voucher_service.adapters.gate import RedisFlashGate, redis_client
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.config import VoucherSettings
from voucher_service.service_layer.context import Context, VoucherCache
from voucher_service.service_layer.unit_of_work import PgUnitOfWork


@dataclass
class Resources:
    settings: VoucherSettings
    pool: asyncpg.Pool
    redis: aioredis.Redis
    producer: AIOKafkaProducer | None
    ctx: Context


@asynccontextmanager
async def resources(settings: VoucherSettings, *, with_producer: bool = True) -> AsyncIterator[Resources]:
    """Open everything for the lifetime of a process (API lifespan or worker)."""
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min,
                             max_size=settings.db_pool_max,
                             command_timeout=max(settings.dependency_timeout_seconds * 5, 10))
    client = redis_client(settings.redis_url, settings.dependency_timeout_seconds)
    producer = None
    if with_producer:
        producer = idempotent_producer(settings.kafka_bootstrap_servers, client_id="voucher-service-flash")
        await producer.start()
    try:
        yield Resources(settings, pool, client, producer, build_context(settings, pool, client, producer))
    finally:
        if producer is not None:
            await producer.stop()
        await client.aclose()
        await pool.close()


def build_context(settings: VoucherSettings, pool: asyncpg.Pool, client: aioredis.Redis,
                  producer: AIOKafkaProducer | None) -> Context:
    publisher = KafkaPublisher(producer, settings.kafka_send_timeout_seconds) if producer else None
    return Context(
        uow=lambda: PgUnitOfWork(pool),
        gate=RedisFlashGate(client, sold_out_ttl=settings.sold_out_cache_seconds),
        publisher=publisher,
        cache=VoucherCache(ttl=settings.voucher_cache_seconds),
        reservation_ttl_seconds=settings.voucher_reservation_ttl_seconds,
    )
