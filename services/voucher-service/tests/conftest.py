"""Fixtures for voucher-service tests: the migrated test DB, real Redis/Kafka, `Deps` wired on them."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType

import asyncpg
import httpx
import pytest
import pytest_asyncio
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api_kit import api_client
from ticketing.db import create_pool
from ticketing.events import BOOKING_EVENTS
from ticketing.kafka import idempotent_producer
from ticketing.redis_client import redis_client
from ticketing.settings import ServiceSettings
from ticketing_testing import import_path
from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.adapters.writer_lag import KafkaWriterLag
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.consumer import booking_events_consumer, voucher_reserved_consumer
from voucher_service.service_layer.ports import Deps
from voucher_testkit import MIGRATIONS, TEST_PREFIX, make_deps, skip_backlog

# The fakes (tests/fakes) as `voucher_fakes`: a name of their own, as each service's fakes package has.
FAKES = import_path(Path(__file__).with_name("fakes"), "voucher_fakes")
SEND_TIMEOUT = 5.0  # the publisher's ack wait, hence the gate-recovery fence


@pytest.fixture(scope="session")
def fakes() -> ModuleType:
    """tests/fakes (also importable by name: `from voucher_fakes import ...`)."""
    return FAKES


@pytest_asyncio.fixture(scope="session")
async def voucher_dsn(migrated_dsn: Callable[[str, Path | None], str]) -> str:
    return migrated_dsn("VOUCHER_DATABASE_URL", MIGRATIONS)


@pytest_asyncio.fixture(scope="session")
async def pool(voucher_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    p = await create_pool(voucher_dsn, min_size=2, max_size=20)
    yield p
    await p.close()


@pytest_asyncio.fixture(scope="session")
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = redis_client(ServiceSettings(redis_url=redis_url), 2.0, retry_dropped=True)
    yield client
    await client.aclose()


@pytest_asyncio.fixture(scope="session")
async def publisher(kafka_bootstrap: str) -> AsyncIterator[KafkaPublisher]:
    producer = idempotent_producer(kafka_bootstrap, client_id="voucher-tests")
    await producer.start()
    yield KafkaPublisher(producer, SEND_TIMEOUT)
    await producer.stop()


@pytest_asyncio.fixture
async def deps(pool: asyncpg.Pool, redis: aioredis.Redis) -> Deps:
    return make_deps(pool, redis)


@pytest_asyncio.fixture(scope="session")
async def reserved_consumer(pool: asyncpg.Pool, redis: aioredis.Redis,
                            kafka_bootstrap: str) -> AsyncIterator[None]:
    """The voucher-reserved consumer running in the test process (its own group, stable across runs)."""
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap, kafka_group_prefix=TEST_PREFIX)
    stop = asyncio.Event()
    deps = make_deps(pool, redis)
    task = asyncio.create_task(voucher_reserved_consumer(settings, pool, deps).run(stop))
    yield
    stop.set()
    await asyncio.wait_for(task, 30)


@pytest_asyncio.fixture(scope="session")
async def booking_consumer(pool: asyncpg.Pool, redis: aioredis.Redis, kafka_bootstrap: str) -> AsyncIterator[None]:
    """The booking-events consumer running in the test process (its own group, stable across runs), reading
    from the topic's end: not the backlog the rest of a parallel suite wrote since the group last ran."""
    settings = VoucherSettings(kafka_bootstrap_servers=kafka_bootstrap, kafka_group_prefix=TEST_PREFIX)
    consumer = booking_events_consumer(settings, pool, make_deps(pool, redis))
    await skip_backlog(kafka_bootstrap, consumer.config.name, BOOKING_EVENTS)
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    yield
    stop.set()
    await asyncio.wait_for(task, 30)


@pytest_asyncio.fixture(scope="session")
async def writer_lag(kafka_bootstrap: str) -> AsyncIterator[KafkaWriterLag]:
    """Offsets of the test writer group (the `reserved_consumer` fixture's)."""
    lag = KafkaWriterLag(kafka_bootstrap, f"{TEST_PREFIX}voucher-writer")
    yield lag
    await lag.close()


@pytest_asyncio.fixture
async def flash_deps(pool: asyncpg.Pool, redis: aioredis.Redis, publisher: KafkaPublisher,
                    reserved_consumer: None, writer_lag: KafkaWriterLag) -> Deps:
    return make_deps(pool, redis, publisher, writer_lag=writer_lag, recovery_fence_seconds=SEND_TIMEOUT)


@pytest_asyncio.fixture
async def api(voucher_dsn: str, kafka_bootstrap: str, redis_url: str,
              reserved_consumer: None) -> AsyncIterator[httpx.AsyncClient]:
    """The real app in-process, its voucher-reserved writer running (the `reserved_consumer` fixture)."""
    async for client in api_client(voucher_dsn, kafka_bootstrap, redis_url):
        yield client
