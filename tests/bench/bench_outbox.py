"""make bench-outbox: relay throughput beside the Kafka producer alone, and commit-to-consume latency p50/p99.

Runs against the real PostgreSQL (platform_test schema of the test database) and Kafka, with the relay
in its own process (as in production) and a plain consumer here. Two phases:
1. throughput, in ROUNDS interleaved rounds (the order of the two swapped every round), each on its own topic
   with the same N messages:
   - the Kafka producer alone: the relay's producer (ticketing.kafka.idempotent_producer, acks=all) sending
     them from memory, timed from the first send to the last acknowledgement;
   - the relay: the N rows committed in one transaction while the relay waits (a backlog, as after an
     outage), timed from that commit to the mark of the last row (both Postgres clock readings). The relay
     process has started and leads before the clock starts, as the producer alone has connected. A consumer
     then reads the topic: every committed row and no other, in order per key, or the round fails;
   their ratio per round (relay / producer alone) is the figure that stands on a shared machine;
2. latency: events committed one per transaction at a steady rate while the relay runs; latency from
   each commit to its arrival at the consumer.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import orjson
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from dotenv import dotenv_values
from hdrh.histogram import HdrHistogram
from ticketing.events import Outgoing
from ticketing.kafka import idempotent_producer
from ticketing.outbox import append_message
from ticketing.testing import REPO_ROOT, apply_migrations, shared_migrations, test_dsn

ENV = {**{k: v for k, v in dotenv_values(REPO_ROOT / ".env").items() if v}, **os.environ}
BOOTSTRAP = ENV.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
DSN = test_dsn(ENV["PLATFORM_TEST_DATABASE_URL"])
WORKER = REPO_ROOT / "shared/tests/integration/platform_worker.py"
THROUGHPUT_EVENTS = int(ENV.get("BENCH_OUTBOX_EVENTS", "20000"))
ROUNDS = int(ENV.get("BENCH_OUTBOX_ROUNDS", "5"))
KEYS = 500
LATENCY_EVENTS, LATENCY_RATE = 2000, 200.0


def message(topic: str, seq: int) -> tuple[uuid.UUID, Outgoing]:
    event_id = uuid.uuid4()
    key = f"k{seq % KEYS}"
    value = orjson.dumps({"eventId": str(event_id), "type": "TestEvent", "key": key, "seq": seq})
    return event_id, Outgoing(topic=topic, key=key, value=value, headers=[("id", str(event_id).encode())])


async def new_topic() -> str:
    name = f"bench-outbox-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=6, replication_factor=1)])
    finally:
        await admin.close()
    return name


async def consume(topic: str, expected: int, arrivals: dict[str, float]) -> None:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                                group_id=f"{topic}-reader")
    await consumer.start()
    try:
        while len(arrivals) < expected:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                now = time.perf_counter()
                for r in records:
                    arrivals.setdefault(orjson.loads(r.value)["eventId"], now)
    finally:
        await consumer.stop()


def start_relay() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(WORKER), "relay", "--dsn", DSN, "--bootstrap", BOOTSTRAP],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def producer_alone(messages: list[Outgoing]) -> float:
    """messages/s of the relay's producer sending them from memory (connected and warmed up first)."""
    producer = idempotent_producer(BOOTSTRAP, client_id="bench-outbox-alone")
    await producer.start()
    try:
        await (await producer.send(messages[0].topic, b"{}", key=b"warm-up"))
        started = time.perf_counter()
        sent = [await producer.send(m.topic, m.value, key=m.key.encode(), headers=m.headers) for m in messages]
        await asyncio.gather(*sent)
        return len(messages) / (time.perf_counter() - started)
    finally:
        await producer.stop()


async def relay_drain(conn: asyncpg.Connection, topic: str, messages: list[tuple[uuid.UUID, Outgoing]]) -> float:
    """events/s of the running relay draining the messages committed at once, then checked at a consumer."""
    async with conn.transaction():  # one commit, one wake-up: a backlog, as after an outage
        for event_id, msg in messages:
            await append_message(conn, event_id, msg)
    committed = await conn.fetchval("SELECT clock_timestamp()")
    while await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL"):
        await asyncio.sleep(0.05)
    last_mark = await conn.fetchval("SELECT max(published_at) FROM outbox")
    duplicates = await check_delivered(topic, messages)
    if duplicates:
        print(f"  ({duplicates} records delivered twice)", flush=True)
    return len(messages) / (last_mark - committed).total_seconds()


async def check_delivered(topic: str, messages: list[tuple[uuid.UUID, Outgoing]]) -> int:
    """Every committed row reached the topic and nothing else did, in commit order per key; the duplicates
    (at least once allows them)."""
    order = {str(event_id): seq for seq, (event_id, _) in enumerate(messages)}
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    by_key: dict[str, list[int]] = {}
    distinct: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(distinct) < len(messages) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for r in records:
                    seq = order[orjson.loads(r.value)["eventId"]]  # KeyError: a record nobody committed
                    by_key.setdefault(r.key.decode(), []).append(seq)
                    distinct.add(seq)
    finally:
        await consumer.stop()
    if len(distinct) != len(messages):
        raise AssertionError(f"{len(messages) - len(distinct)} of {len(messages)} committed rows never arrived")
    if any(list(dict.fromkeys(seqs)) != sorted(set(seqs)) for seqs in by_key.values()):
        raise AssertionError("a key's records arrived out of commit order")
    return sum(map(len, by_key.values())) - len(distinct)


async def throughput(conn: asyncpg.Connection) -> list[dict[str, float]]:
    rounds = []
    for n in range(ROUNDS):
        alone_topic, relay_topic = await new_topic(), await new_topic()
        alone_messages = [m for _, m in (message(alone_topic, seq) for seq in range(THROUGHPUT_EVENTS))]
        relay_messages = [message(relay_topic, seq) for seq in range(THROUGHPUT_EVENTS)]
        if n % 2:
            relay = await relay_drain(conn, relay_topic, relay_messages)
            alone = await producer_alone(alone_messages)
        else:
            alone = await producer_alone(alone_messages)
            relay = await relay_drain(conn, relay_topic, relay_messages)
        rounds.append({"producer_alone_per_s": round(alone), "relay_events_per_s": round(relay),
                       "ratio": round(relay / alone, 3)})
        print(f"  round {n + 1}: producer alone {alone:8,.0f} msg/s, relay {relay:8,.0f} events/s, "
              f"ratio {relay / alone:.2f}", flush=True)
    return rounds


async def latency(conn: asyncpg.Connection) -> HdrHistogram:
    topic = await new_topic()
    arrivals: dict[str, float] = {}
    committed: dict[str, float] = {}
    reader = asyncio.create_task(consume(topic, LATENCY_EVENTS, arrivals))
    await asyncio.sleep(3)  # the reader joins its group first
    start = time.perf_counter()
    for seq in range(LATENCY_EVENTS):
        await asyncio.sleep(max(0.0, start + seq / LATENCY_RATE - time.perf_counter()))
        event_id, msg = message(topic, seq)
        async with conn.transaction():
            await append_message(conn, event_id, msg)
        committed[str(event_id)] = time.perf_counter()
    await asyncio.wait_for(reader, 120)
    histogram = HdrHistogram(1, 60_000_000, 3)
    for event_id, t in committed.items():
        histogram.record_value(max(1, int((arrivals[event_id] - t) * 1e6)))
    return histogram


async def leading(conn: asyncpg.Connection) -> None:
    """Wait until the relay leads and its producer is up: a first row published."""
    event_id, msg = message(await new_topic(), 0)
    async with conn.transaction():
        await append_message(conn, event_id, msg)
    deadline = time.monotonic() + 120
    while await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL"):
        if time.monotonic() > deadline:
            raise TimeoutError("the relay published nothing in 120 s")
        await asyncio.sleep(0.1)


async def main() -> tuple[list[dict[str, float]], HdrHistogram]:
    apply_migrations(DSN, shared_migrations())
    conn = await asyncpg.connect(DSN)
    relay = start_relay()
    try:
        await conn.execute("TRUNCATE outbox")
        await leading(conn)
        rounds = await throughput(conn)
        histogram = await latency(conn)
        await conn.execute("TRUNCATE outbox")
    finally:
        relay.terminate()
        relay.wait()
        await conn.close()
    return rounds, histogram


def run() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from results import Results

    print(f"bench-outbox on {os.cpu_count()} cores (noisy shared machine: read the ratios of each round); "
          f"{THROUGHPUT_EVENTS:,} events a round, {KEYS} keys, 6 partitions", flush=True)
    with Results("outbox") as r:
        rounds, histogram = asyncio.run(main())
        p = histogram.get_value_at_percentile
        ratio = statistics.median(x["ratio"] for x in rounds)
        relay = statistics.median(x["relay_events_per_s"] for x in rounds)
        alone = statistics.median(x["producer_alone_per_s"] for x in rounds)
        r.data.update({"relay_events_per_s": round(relay), "producer_alone_per_s": round(alone),
                       "relay_of_producer": ratio, "rounds": rounds, "events": THROUGHPUT_EVENTS,
                       "commit_to_consume_p50_ms": p(50) / 1000, "commit_to_consume_p99_ms": p(99) / 1000,
                       "latency_rate_per_s": LATENCY_RATE})
    print(f"  relay / producer alone: median {ratio:.2f} over {len(rounds)} interleaved rounds "
          f"(relay {relay:,.0f} events/s, producer alone {alone:,.0f} msg/s; every row delivered, in order per key)")
    print(f"  commit->consume    : p50 {p(50) / 1000:.1f} ms, p99 {p(99) / 1000:.1f} ms, "
          f"max {histogram.get_max_value() / 1000:.1f} ms ({LATENCY_EVENTS} events at {LATENCY_RATE:.0f}/s)")
    print(f"  load average before/after: {r.data['load_before']} / {r.data['load_after']}; core speed (ms for a "
          f"fixed loop) {r.data['cpu_speed_before']['median_ms']} / {r.data['cpu_speed_after']['median_ms']}")


if __name__ == "__main__":
    run()
