"""Kafka clients configured the one way this platform uses them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from ticketing.events import TOPICS


def idempotent_producer(bootstrap: str, *, client_id: str) -> AIOKafkaProducer:
    # aiokafka is not idempotent by default; enable_idempotence forces acks=all and keeps per-partition
    # order across the producer's own retries.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        request_timeout_ms=15000,
        retry_backoff_ms=200,
    )


async def create_topics(bootstrap: str, topics: dict[str, int] = TOPICS) -> list[str]:
    """Create the missing topics; returns the names created. Safe to run any number of times."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="ticketing-topics")
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(name, num_partitions=n, replication_factor=1)
                   for name, n in topics.items() if name not in existing]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # another process won the race; the topic is there, which is what we want
        return [t.name for t in missing]
    finally:
        await admin.close()


async def kafka_reachable(bootstrap: str, timeout: float = 2.0) -> bool:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000))
    try:
        await asyncio.wait_for(admin.start(), timeout)
        await asyncio.wait_for(admin.list_topics(), timeout)
        return True
    except Exception:
        return False
    finally:
        await admin.close()


def kafka_readiness(bootstrap: str) -> Callable[[], Awaitable[None]]:
    """A `/readyz` check: raises when the broker does not answer a metadata request."""
    async def check() -> None:
        if not await kafka_reachable(bootstrap):
            raise ConnectionError(f"kafka at {bootstrap} does not answer")
    return check
