"""Kafka clients configured the one way this platform uses them.

Security (SASL, TLS) and the topic layout are properties of the deployment, not of a call site: callers
pass the broker address they want (tests pick their own), and `client_options` adds the process's
security settings (`KafkaSettings`: environment, then `.env`). Every client goes through it: the
producers (relay, DLQ, flash), the consumers, the admin clients, the voucher writer-lag probe, and
faust's broker credentials (notifier).
"""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.helpers import create_ssl_context

from ticketing.events import TOPICS
from ticketing.settings import KafkaSettings


@cache
def kafka_settings() -> KafkaSettings:
    """Read once per process; a wrong setting fails the first client, at start-up."""
    return KafkaSettings()


def client_options(bootstrap: str, settings: KafkaSettings | None = None) -> dict[str, Any]:
    """Keyword arguments for any aiokafka client: the address and the deployment's SASL/TLS settings."""
    s = settings or kafka_settings()
    options: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": s.kafka_security_protocol}
    if s.kafka_security_protocol in ("SSL", "SASL_SSL"):
        context = create_ssl_context(cafile=s.kafka_ssl_cafile or None, certfile=s.kafka_ssl_certfile or None,
                                     keyfile=s.kafka_ssl_keyfile or None)
        context.check_hostname = s.kafka_ssl_check_hostname
        options["ssl_context"] = context
    if s.kafka_security_protocol.startswith("SASL"):
        options.update(sasl_mechanism=s.kafka_sasl_mechanism, sasl_plain_username=s.kafka_sasl_username,
                       sasl_plain_password=s.kafka_sasl_password)
    return options


def idempotent_producer(bootstrap: str, *, client_id: str, linger_ms: int = 5) -> AIOKafkaProducer:
    # aiokafka is not idempotent by default; enable_idempotence forces acks=all and keeps per-partition
    # order across the producer's own retries.
    return AIOKafkaProducer(
        **client_options(bootstrap),
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=linger_ms,
        request_timeout_ms=15000,
        retry_backoff_ms=200,
    )


def topic_layout(settings: KafkaSettings | None = None) -> dict[str, int]:
    """The catalogue's topics with this deployment's partition counts."""
    s = settings or kafka_settings()
    unknown = set(s.kafka_topic_partitions) - set(TOPICS)
    if unknown:
        raise ValueError(f"KAFKA_TOPIC_PARTITIONS names unknown topics: {', '.join(sorted(unknown))}")
    return {**TOPICS, **s.kafka_topic_partitions}


async def create_topics(bootstrap: str, topics: dict[str, int] | None = None) -> list[str]:
    """Create the missing topics; returns the names created. Safe to run any number of times.

    Replication factor and min.insync.replicas come from the settings (1 and the broker's default
    locally; 3 and 2 on a production cluster). Existing topics are never altered.
    """
    s = kafka_settings()
    configs = {} if s.kafka_topic_min_insync_replicas is None else {
        "min.insync.replicas": str(s.kafka_topic_min_insync_replicas)}
    admin = AIOKafkaAdminClient(**client_options(bootstrap), client_id="ticketing-topics")
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(name, num_partitions=n, replication_factor=s.kafka_topic_replication_factor,
                            topic_configs=configs)
                   for name, n in (topic_layout() if topics is None else topics).items() if name not in existing]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # another process won the race; the topic is there, which is what we want
        return [t.name for t in missing]
    finally:
        await admin.close()


async def kafka_reachable(bootstrap: str, timeout: float = 2.0) -> bool:
    admin = AIOKafkaAdminClient(**client_options(bootstrap), request_timeout_ms=int(timeout * 1000))
    try:
        await asyncio.wait_for(admin.start(), timeout)
        await asyncio.wait_for(admin.list_topics(), timeout)
        return True
    except Exception:
        return False
    finally:
        await admin.close()


class KafkaProbe:
    """`/readyz`'s Kafka check: one metadata request on a connection kept between probes (a probe every few
    seconds from every kubelet must not open a connection to the broker each time). A failed request
    drops the connection; the next probe opens a new one."""

    def __init__(self, bootstrap: str, timeout: float = 2.0) -> None:
        self.bootstrap, self.timeout = bootstrap, timeout
        self._admin: AIOKafkaAdminClient | None = None
        self._lock = asyncio.Lock()

    async def __call__(self) -> None:
        async with self._lock:  # concurrent probes share the one connection
            try:
                if self._admin is None:
                    self._admin = AIOKafkaAdminClient(**client_options(self.bootstrap),
                                                      request_timeout_ms=int(self.timeout * 1000))
                    await asyncio.wait_for(self._admin.start(), self.timeout)
                await asyncio.wait_for(self._admin.list_topics(), self.timeout)
            except Exception as exc:
                await self.close()
                raise ConnectionError(f"kafka at {self.bootstrap} does not answer") from exc

    async def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            await admin.close()


def kafka_readiness(bootstrap: str) -> KafkaProbe:
    """A `/readyz` check: raises when the broker does not answer a metadata request."""
    return KafkaProbe(bootstrap)
