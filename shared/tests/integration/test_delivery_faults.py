"""Scenarios R5, R6, R7 (docs/reliability.md) and the DLQ, against real Kafka and PostgreSQL processes.

Each test writes committed outbox rows, lets a relay publish them and an idempotent consumer apply
them as rows of `test_effect` (no unique constraint there: a double effect would show), injects its
fault, then checks the final database state: every event applied exactly once.
"""

import asyncio
import random
import subprocess
import time
import uuid

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from platform_support import make_message, read_topic, start_worker, write_events
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.db import create_pool
from ticketing_testing import REPO_ROOT, stop_process

pytestmark = [pytest.mark.integration, pytest.mark.reliability]
INFRA = str(REPO_ROOT / "deploy/local/infra.sh")


async def effects(db) -> dict[uuid.UUID, int]:
    rows = await db.fetch("SELECT event_id, count(*) AS n FROM test_effect GROUP BY event_id")
    return {r["event_id"]: r["n"] for r in rows}


async def wait_all_applied(db, ids, timeout: float) -> dict[uuid.UUID, int]:
    deadline = time.monotonic() + timeout
    applied: dict[uuid.UUID, int] = {}
    while time.monotonic() < deadline:
        applied = await effects(db)
        if set(ids) <= set(applied):
            return applied
        await asyncio.sleep(0.3)
    missing = len(set(ids) - set(applied))
    raise AssertionError(f"{missing} of {len(ids)} events never applied")


async def exits_or_drains(db, relay, timeout: float) -> int | None:
    """The relay's exit code; None once every row is published (a relay that did not crash goes on polling)
    or after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (code := relay.poll()) is not None:
            return code
        if await db.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0:
            return relay.poll()
        await asyncio.sleep(0.2)
    return None


@pytest.mark.serial  # kills the broker every other test uses
async def test_r5_broker_killed_and_restarted_while_events_flow(db, topic, platform_dsn, kafka_bootstrap):
    relay = start_worker("relay", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap)
    consumer = start_worker("consume", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap,
                            "--topic", topic, "--group", f"r5-{topic}")
    ids: list[uuid.UUID] = []
    max_lag = 0.0
    try:
        for kill in range(2):
            ids += await write_events(db, topic, [f"r5-{kill}-{k}" for k in range(10)], per_key=10)
            subprocess.run([INFRA, "kafka-kill"], check=True, capture_output=True)
            ids += await write_events(db, topic, [f"r5-{kill}-late-{k}" for k in range(10)], per_key=5)
            subprocess.run([INFRA, "kafka-start"], check=True, capture_output=True)
            oldest = await db.fetchval("SELECT min(created_at) FROM outbox WHERE published_at IS NULL")
            if oldest is not None:
                max_lag = max(max_lag, time.time() - oldest.timestamp())
        applied = await wait_all_applied(db, ids, timeout=120)
    finally:
        stop_process(relay)
        stop_process(consumer)
    assert await db.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0, "lost > 0"
    assert all(applied[i] == 1 for i in ids), "a duplicate side effect"
    print(f"\nR5: 2 broker kills, {len(ids)} events, lost=0, duplicate effects=0, max relay lag {max_lag:.1f}s")


async def test_r6_relay_killed_between_publish_and_mark(db, topic, platform_dsn, kafka_bootstrap):
    ids = await write_events(db, topic, [f"r6-{k}" for k in range(20)], per_key=20)
    consumer = start_worker("consume", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap,
                            "--topic", topic, "--group", f"r6-{topic}")
    crashes = 0
    try:
        while await db.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") > 0:
            relay = start_worker("relay", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap,
                                 "--crash-p", "0.5", "--batch-size", "50")
            code = await exits_or_drains(db, relay, 20)
            stop_process(relay)
            crashes += code == 86
            assert crashes < 200
        applied = await wait_all_applied(db, ids, timeout=60)
    finally:
        stop_process(consumer)
    delivered = await read_topic(kafka_bootstrap, topic, set(ids))
    assert crashes > 0, "the fault never fired"
    assert len(delivered) > len(ids), "a crash after publish must have produced duplicates"
    assert all(applied[i] == 1 for i in ids)
    print(f"\nR6: {crashes} relay crashes, {len(ids)} events, {len(delivered) - len(ids)} duplicates "
          f"delivered and absorbed, effects exactly once")


async def test_r7_consumer_killed_after_effect_before_offset_commit(db, topic, platform_dsn, kafka_bootstrap):
    ids = await write_events(db, topic, [f"r7-{k}" for k in range(10)], per_key=20)
    relay = start_worker("relay", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap)
    group, kills = f"r7-{topic}", 0
    try:
        await read_topic(kafka_bootstrap, topic, set(ids))
        # Three runs killed right after an effect (at a random record, so mid-batch), then one that finishes.
        for crash_after in random.sample(range(5, 60), 3):
            consumer = start_worker("consume", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap,
                                    "--topic", topic, "--group", group, "--crash-after", str(crash_after))
            try:
                code = await asyncio.to_thread(consumer.wait, 30)  # a kill costs a group rejoin
            except subprocess.TimeoutExpired:
                code = None
            stop_process(consumer)
            kills += code == -9
        consumer = start_worker("consume", "--dsn", platform_dsn, "--bootstrap", kafka_bootstrap,
                                "--topic", topic, "--group", group)
        applied = await wait_all_applied(db, ids, timeout=60)
        stop_process(consumer)
    finally:
        stop_process(relay)
    assert kills == 3, "the fault did not fire every time"
    assert all(applied[i] == 1 for i in ids), "a redelivery after the kill applied twice"
    print(f"\nR7: {kills} consumer kills after effect/before commit, {len(ids)} events, double effects=0")


async def test_poison_message_goes_to_dlq_and_the_partition_keeps_flowing(db, topic, platform_dsn, kafka_bootstrap):
    from platform_worker import TestEvent, apply_effect

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=True)
    await producer.start()
    good_before, good_after = make_message(topic, "same-key", 0), make_message(topic, "same-key", 2)
    try:
        for _event_id, message in (good_before, (None, None), good_after):
            value = message.value if message else b'{"eventId": "not-a-uuid", "type": "TestEvent"}'
            await producer.send_and_wait(topic, value=value, key=b"same-key")
    finally:
        await producer.stop()
    dlq = f"{topic}.DLQ"
    from ticketing.kafka import create_topics
    await create_topics(kafka_bootstrap, {dlq: 1})

    pool = await create_pool(platform_dsn, min_size=1, max_size=2)
    config = ConsumerConfig(name=f"dlq-{topic}", topics=[topic], bootstrap=kafka_bootstrap,
                            decode=TestEvent.model_validate_json, handlers={"TestEvent": apply_effect},
                            backoff_initial=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(IdempotentConsumer(config, pool).run(stop))
    try:
        await wait_all_applied(db, [good_before[0], good_after[0]], timeout=30)
    finally:
        stop.set()
        await task
        await pool.close()

    reader = AIOKafkaConsumer(dlq, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest")
    await reader.start()
    try:
        record = await asyncio.wait_for(reader.getone(), 20)
    finally:
        await reader.stop()
    headers = {k: v.decode() for k, v in record.headers}
    assert headers["dlq.original.topic"] == topic
    assert int(headers["dlq.original.offset"]) == 1
    assert headers["dlq.original.partition"].isdigit()
    assert "undecodable" in headers["dlq.error"]
    assert orjson.loads(record.value)["eventId"] == "not-a-uuid"
