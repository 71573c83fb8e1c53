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
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code
from aiokafka.helpers import create_ssl_context
from tenacity import AsyncRetrying, RetryError, retry_if_result, stop_after_delay

from ticketing.events import TOPICS
from ticketing.retries import backoff
from ticketing.settings import KafkaSettings

DYNAMIC_TOPIC_CONFIG = 1  # a DescribeConfigs entry's source: set on the topic itself (not a broker default)


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


def idempotent_producer(bootstrap: str, *, client_id: str, linger_ms: int = 5,
                        max_batch_size: int = 16384) -> AIOKafkaProducer:
    # aiokafka is not idempotent by default; enable_idempotence forces acks=all and keeps per-partition
    # order across the producer's own retries.
    return AIOKafkaProducer(
        **client_options(bootstrap),
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=linger_ms,
        max_batch_size=max_batch_size,
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


def topic_configs(name: str, settings: KafkaSettings | None = None) -> dict[str, str]:
    """The configs the platform sets on a topic: deletion after the retention (a DLQ keeps its messages longer,
    so an operator has time to look at them), and `min.insync.replicas` when the deployment names one."""
    s = settings or kafka_settings()
    hours = s.kafka_dlq_retention_hours if name.endswith(".DLQ") else s.kafka_topic_retention_hours
    configs = {"cleanup.policy": "delete", "retention.ms": str(hours * 3_600_000)}
    if s.kafka_topic_min_insync_replicas is not None:
        configs["min.insync.replicas"] = str(s.kafka_topic_min_insync_replicas)
    return configs


async def create_topics(bootstrap: str, topics: dict[str, int] | None = None, *, align: bool = False,
                        settings: KafkaSettings | None = None) -> list[str]:
    """Create the missing topics; returns the names created. Safe to run any number of times.

    Replication factor, retention, cleanup policy and min.insync.replicas come from the settings (one replica
    and the broker's min.insync.replicas locally; 3 and 2 on a production cluster). With `align` (`ticketing
    topics`, the chart's topics Job: a Kafka user allowed to alter topic configs) the topics already there get
    the same retention, cleanup policy and min.insync.replicas; their partitions and replicas stay as they are,
    and it returns once the brokers report every topic's configs.
    """
    s = settings or kafka_settings()
    layout = topic_layout(s) if topics is None else topics
    admin = AIOKafkaAdminClient(**client_options(bootstrap, s), client_id="ticketing-topics")
    await admin.start()
    try:
        listed = set(await admin.list_topics())
        created = await create_missing(admin, [
            NewTopic(name, num_partitions=n, replication_factor=s.kafka_topic_replication_factor,
                     topic_configs=topic_configs(name, s))
            for name, n in layout.items() if name not in listed])
        if align:
            await align_topic_configs(admin, [name for name in layout if name not in created], s)
            await until_configs_read_back(admin, {name: topic_configs(name, s) for name in created})
        return created
    finally:
        await admin.close()


async def create_missing(admin: AIOKafkaAdminClient, topics: list[NewTopic]) -> list[str]:
    """Ask the controller for the topics; returns the names it created. The broker that listed the topics may
    not know yet of one made a moment ago (by another process, or by the caller just before): the controller
    answers TOPIC_ALREADY_EXISTS for it, and it counts as there, to be aligned like the others. Any other
    error is raised with the topic's name (the answer carries errors; the client raises none of them)."""
    if not topics:
        return []
    created = []
    for name, code, *_ in (await admin.create_topics(topics)).topic_errors:
        if code and code != TopicAlreadyExistsError.errno:
            raise KafkaError(f"create topic {name}: {for_code(code).__name__} ({code})")
        if not code:
            created.append(name)
    return created


async def align_topic_configs(admin: AIOKafkaAdminClient, names: list[str], settings: KafkaSettings) -> list[str]:
    """Give existing topics the platform's configs; returns the names changed. AlterConfigs replaces a topic's
    dynamic configs whole, so the ones set by other means (read back first) are sent along unchanged."""
    if not names:
        return []
    changed = []
    for response in await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names]):
        for error, message, _, name, entries in response.resources:
            if error:
                raise KafkaError(f"describe configs of {name}: {message} ({error})")
            current = {e[0]: e[1] for e in entries if e[3] == DYNAMIC_TOPIC_CONFIG and e[1] is not None}
            wanted = {**current, **topic_configs(name, settings)}
            if wanted != current:
                changed.append(ConfigResource(ConfigResourceType.TOPIC, name, configs=wanted))
    for response in await admin.alter_configs(changed) if changed else []:
        for error, message, _, name in response.resources:
            if error:
                raise KafkaError(f"alter configs of {name}: {message} ({error})")
    await until_configs_read_back(admin, {c.name: topic_configs(c.name, settings) for c in changed})
    return [c.name for c in changed]


async def until_configs_read_back(admin: AIOKafkaAdminClient, wanted: dict[str, dict[str, str]],
                                  seconds: float = 30.0) -> None:
    """Return once the brokers report the wanted configs. A broker answers AlterConfigs when the controller has
    committed the change but applies it to what it reports a moment later, so a caller that reads (a topics
    Job followed by a check, an operator's describe) could still see the old retention."""

    async def lagging() -> list[str]:
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in wanted]
        read = {r[3]: {e[0]: e[1] for e in r[4]} for response in await admin.describe_configs(resources)
                for r in response.resources}
        return [n for n, configs in wanted.items() if any(read.get(n, {}).get(k) != v for k, v in configs.items())]

    if not wanted:
        return
    retrying = AsyncRetrying(retry=retry_if_result(bool), wait=backoff(0.05, 1.0), stop=stop_after_delay(seconds))
    try:
        await retrying(lagging)
    except RetryError as error:
        late = ", ".join(error.last_attempt.result())
        raise KafkaError(f"the brokers still report the old configs of {late} after {seconds:g} s") from None


async def topic_partitions(bootstrap: str, topic: str) -> list[int]:
    """The topic's partition ids, sorted, from one metadata request (a consumer learns them only lazily)."""
    admin = AIOKafkaAdminClient(**client_options(bootstrap))
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return sorted(p["partition"] for t in described for p in t["partitions"])


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
