"""Outbox rows Kafka refuses for good are quarantined, the relay goes on, per-key order holds; outages retry.

Real PostgreSQL and Kafka. Each topic here is the test's own; the refusals are real ones: a record over the
producer's max_request_size (refused at enqueue), one over the topic's max.message.bytes (refused by the
broker), an illegal topic name and headers that are not [name, text] pairs.
"""

import asyncio
import logging
import uuid

import orjson
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from platform_support import read_topic
from prometheus_client import REGISTRY
from ticketing import cli
from ticketing.events import Outgoing
from ticketing.outbox import append_message
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing_testing import eventually

pytestmark = pytest.mark.integration

TOPIC_LIMIT = 100_000  # the topic's max.message.bytes
REFUSED_BY_BROKER = 200_000  # under the producer's 1 MiB max_request_size, over the topic's limit
REFUSED_AT_ENQUEUE = 2_000_000  # over max_request_size


class Outbox:
    """Writes numbered test events (one transaction each) and remembers their event ids by (key, seq)."""

    def __init__(self, db, topic: str) -> None:
        self.db, self.topic = db, topic
        self.ids: dict[tuple[str, int], uuid.UUID] = {}

    async def write(self, key: str, seq: int, *, pad: int = 0, topic: str | None = None,
                    headers: str | None = None) -> uuid.UUID:
        event_id = uuid.uuid4()
        value = orjson.dumps({"eventId": str(event_id), "type": "TestEvent", "key": key, "seq": seq,
                              "pad": "x" * pad})
        async with self.db.transaction():
            if headers is None:
                await append_message(self.db, event_id, Outgoing(topic=topic or self.topic, key=key, value=value,
                                                                 headers=[("id", str(event_id).encode())]))
            else:  # a row the writer would never produce, as a bug or a hand edit could leave one
                await self.db.execute("""INSERT INTO outbox (event_id, topic, message_key, payload, headers)
                                         VALUES ($1, $2, $3, $4, $5::jsonb)""",
                                      event_id, topic or self.topic, key, value, headers)
        self.ids[(key, seq)] = event_id
        return event_id

    async def row_id(self, key: str, seq: int) -> int:
        return int(await self.db.fetchval("SELECT id FROM outbox WHERE event_id = $1", self.ids[(key, seq)]))

    async def state(self, key: str, seq: int) -> str:
        row = await self.db.fetchrow("SELECT published_at, quarantined_at FROM outbox WHERE event_id = $1",
                                     self.ids[(key, seq)])
        return "published" if row["published_at"] else "quarantined" if row["quarantined_at"] else "waiting"


async def new_topic(bootstrap: str, name: str | None = None, **configs: str) -> str:
    name = name or f"platform-test-{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1, topic_configs=configs)])
    finally:
        await admin.close()
    return name


async def raise_topic_limit(bootstrap: str, topic: str, limit: int) -> None:
    """The operator's fix for a record too large for the topic; returns once the broker reports it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                  configs={"max.message.bytes": str(limit)})])

        async def applied() -> bool:
            [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            entries = {entry[0]: entry[1] for entry in response.resources[0][4]}
            return entries.get("max.message.bytes") == str(limit)

        await eventually(applied, timeout=20)
    finally:
        await admin.close()


async def delete_topics(bootstrap: str, *names: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics(list(names))
    except Exception:
        pass  # a topic left behind is harmless
    finally:
        await admin.close()


async def topic_size(bootstrap: str, topic: str) -> int:
    """Records in the topic: its partitions' end offsets (the idempotent producer leaves no gaps)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap)  # no group: every partition assigned
    await consumer.start()
    try:
        while not consumer.assignment():
            await asyncio.sleep(0.05)
        return sum((await consumer.end_offsets(list(consumer.assignment()))).values())
    finally:
        await consumer.stop()


def quarantined_total() -> float:
    return REGISTRY.get_sample_value("ticketing_outbox_quarantined_total", {"service": "platform-test"}) or 0.0


async def running(dsn: str, bootstrap: str, **overrides):
    relay = OutboxRelay(RelayConfig(service="platform-test", dsn=dsn, bootstrap=bootstrap, poll_interval=0.2,
                                    **overrides))
    stop = asyncio.Event()
    return stop, asyncio.create_task(relay.run(stop))


def by_key(records) -> dict[str, list[int]]:
    seqs: dict[str, list[int]] = {}
    for _partition, _offset, key, _id, seq in sorted(records, key=lambda r: (r[0], r[1])):
        seqs.setdefault(key, []).append(seq)
    return seqs


async def test_refused_rows_are_quarantined_the_rest_arrive_once_in_order(db, platform_dsn, kafka_bootstrap,
                                                                         caplog):
    caplog.set_level(logging.ERROR, logger="ticketing.relay")
    topic = await new_topic(kafka_bootstrap, **{"max.message.bytes": str(TOPIC_LIMIT)})
    out = Outbox(db, topic)
    counted_before = quarantined_total()
    await out.write("k1", 0)
    await out.write("k2", 0)
    await out.write("k1", 1, pad=REFUSED_BY_BROKER)
    await out.write("k2", 1)
    await out.write("k1", 2)  # behind a quarantined row of its key: held back
    await out.write("k3", 0)
    await out.write("k2", 2, pad=REFUSED_AT_ENQUEUE)
    await out.write("k1", 3)
    await out.write("k2", 3)  # held back
    await out.write("k4", 0, headers='{"id": 5}')
    await out.write("k4", 1)  # held back
    await out.write("k5", 0, topic="no such topic!")
    await out.write("k3", 1)
    stop, task = await running(platform_dsn, kafka_bootstrap)
    try:
        await eventually(lambda: _equals(out.state("k3", 1), "published"), timeout=60)
        await out.write("k3", 2)  # the relay goes on after the refusals
        expected = {out.ids[ks] for ks in [("k1", 0), ("k2", 0), ("k2", 1), ("k3", 0), ("k3", 1), ("k3", 2)]}
        records = await read_topic(kafka_bootstrap, topic, expected, timeout=60)
        await asyncio.sleep(1.5)  # a relay looping on the batch would send its rows again meanwhile
        size = await topic_size(kafka_bootstrap, topic)
    finally:
        stop.set()
        await task
        await delete_topics(kafka_bootstrap, topic)

    assert by_key(records) == {"k1": [0], "k2": [0, 1], "k3": [0, 1, 2]}
    assert size == len(expected), "a row was published twice"
    states = {(k, s): await out.state(k, s) for k, s in out.ids}
    assert {ks for ks, state in states.items() if state == "quarantined"} == {
        ("k1", 1), ("k2", 2), ("k4", 0), ("k5", 0)}
    assert {ks for ks, state in states.items() if state == "waiting"} == {("k1", 2), ("k1", 3), ("k2", 3), ("k4", 1)}
    errors = dict(await db.fetch("SELECT message_key, quarantine_error FROM outbox WHERE quarantined_at IS NOT NULL"))
    assert errors["k1"].startswith("MessageSizeTooLargeError") and errors["k2"].startswith("MessageSizeTooLargeError")
    assert "headers" in errors["k4"] and "topic name" in errors["k5"]
    assert quarantined_total() - counted_before == 4
    logged = [r for r in caplog.records if getattr(r, "action", None) == "outbox.quarantined"]
    assert len(logged) == 4 and all(r.levelno == logging.ERROR for r in logged)


async def test_a_replay_after_the_fix_publishes_the_row_before_the_ones_held_behind_it(
        db, platform_dsn, kafka_bootstrap, monkeypatch, capsys):
    monkeypatch.setenv("HOLD_DATABASE_URL", platform_dsn)  # the CLI reads the same settings as the services
    topic = await new_topic(kafka_bootstrap, **{"max.message.bytes": str(TOPIC_LIMIT)})
    out = Outbox(db, topic)
    await out.write("k1", 0)
    await out.write("k1", 1, pad=REFUSED_BY_BROKER)
    await out.write("k1", 2)
    stop, task = await running(platform_dsn, kafka_bootstrap)
    try:
        await eventually(lambda: _equals(out.state("k1", 1), "quarantined"), timeout=60)
        refused = await out.row_id("k1", 1)
        counted = quarantined_total()
        assert await operator("outbox", "quarantined", "--service", "hold") == 0
        listing = capsys.readouterr().out
        assert f"{refused} " in listing and "MessageSizeTooLargeError" in listing and "held behind: 1" in listing

        assert await operator("outbox", "replay", "--service", "hold", "--id", str(refused), "--dry-run") == 0
        assert "would put" in capsys.readouterr().out
        await asyncio.sleep(1.0)
        assert await out.state("k1", 1) == "quarantined"  # a dry run changes nothing

        assert await operator("outbox", "replay", "--service", "hold", "--id", str(refused)) == 0  # cause not fixed
        await eventually(lambda: _equals(out.state("k1", 1), "quarantined"), timeout=30)
        await eventually(lambda: _above(quarantined_total, counted), timeout=30)  # refused again, counted again

        await raise_topic_limit(kafka_bootstrap, topic, 1_048_588)
        assert await operator("outbox", "replay", "--service", "hold", "--id", str(refused)) == 0
        records = await read_topic(kafka_bootstrap, topic, {out.ids[("k1", 2)]}, timeout=60)
        capsys.readouterr()
        assert await operator("outbox", "replay", "--service", "hold", "--id", str(refused)) == 0  # idempotent
        assert "not in quarantine" in capsys.readouterr().out
    finally:
        stop.set()
        await task
        await delete_topics(kafka_bootstrap, topic)
    assert by_key(records) == {"k1": [0, 1, 2]}
    assert [await out.state("k1", s) for s in range(3)] == ["published"] * 3
    assert await operator("outbox", "replay", "--service", "hold", "--id", "999999999") == 1  # no such row


async def test_a_topic_missing_for_a_while_is_retried_never_quarantined(db, platform_dsn, kafka_bootstrap):
    """The broker cannot take a row for now (its topic does not exist yet): the rows before it are
    published once, it waits, nothing is quarantined, and it goes out in order once the topic exists."""
    present = await new_topic(kafka_bootstrap)
    missing = f"platform-test-{uuid.uuid4().hex[:10]}"
    out = Outbox(db, present)
    errors_before = REGISTRY.get_sample_value("ticketing_outbox_publish_errors_total",
                                              {"service": "platform-test"}) or 0.0
    await out.write("a", 0)
    await out.write("a", 1)
    await out.write("b", 0, topic=missing)
    await out.write("a", 2)
    stop, task = await running(platform_dsn, kafka_bootstrap, send_timeout=2.0)
    try:
        await read_topic(kafka_bootstrap, present, {out.ids[("a", 1)]}, timeout=30)

        async def retried_twice() -> bool:
            errors = REGISTRY.get_sample_value("ticketing_outbox_publish_errors_total", {"service": "platform-test"})
            return (errors or 0.0) - errors_before >= 2

        await eventually(retried_twice, timeout=30)
        assert await out.state("b", 0) == "waiting" and await out.state("a", 2) == "waiting"
        await new_topic(kafka_bootstrap, missing)
        late = await read_topic(kafka_bootstrap, missing, {out.ids[("b", 0)]}, timeout=60)
        records = await read_topic(kafka_bootstrap, present, {out.ids[("a", 2)]}, timeout=60)
    finally:
        stop.set()
        await task
        await delete_topics(kafka_bootstrap, present, missing)
    assert [r[3] for r in late] == [out.ids[("b", 0)]]
    assert [r[4] for r in sorted(records, key=lambda r: (r[0], r[1]))] == [0, 1, 2], "sent once each, in order"
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE quarantined_at IS NOT NULL") == 0


async def operator(*argv: str) -> int:
    """`ticketing outbox ...` as an operator runs it (its own event loop: a thread here)."""
    return await asyncio.to_thread(cli.main, list(argv))


async def _equals(value, expected) -> bool:
    return await value == expected


async def _above(read, floor: float) -> bool:
    return read() > floor
