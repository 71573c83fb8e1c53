"""make bench-outbox: relay throughput (events/s) and commit-to-consume latency p50/p99.

Runs against the real PostgreSQL (platform_test schema of the test database) and Kafka, with the relay
in its own process (as in production) and a plain consumer here. Two phases:
1. throughput: N committed rows already waiting, the relay started, time until the consumer saw all;
2. latency: events committed one per transaction at a steady rate while the relay runs; latency from
   each commit to its arrival at the consumer.
Figures depend on the machine (2 shared cores here); compare runs on the same machine only.
"""

from __future__ import annotations

import asyncio
import os
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
from ticketing.outbox import append_message
from ticketing_testing import REPO_ROOT, apply_migrations, shared_migrations, test_dsn

ENV = {**{k: v for k, v in dotenv_values(REPO_ROOT / ".env").items() if v}, **os.environ}
BOOTSTRAP = ENV.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
DSN = test_dsn(ENV["PLATFORM_TEST_DATABASE_URL"])
WORKER = REPO_ROOT / "shared/tests/integration/platform_worker.py"
THROUGHPUT_EVENTS = int(ENV.get("BENCH_OUTBOX_EVENTS", "20000"))
LATENCY_EVENTS, LATENCY_RATE = 2000, 200.0


def message(topic: str, seq: int) -> tuple[uuid.UUID, Outgoing]:
    event_id = uuid.uuid4()
    value = orjson.dumps({"eventId": str(event_id), "type": "TestEvent", "key": f"k{seq % 500}", "seq": seq})
    return event_id, Outgoing(topic=topic, key=f"k{seq % 500}", value=value,
                              headers=[("id", str(event_id).encode())])


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


async def throughput(conn: asyncpg.Connection) -> float:
    topic = await new_topic()
    async with conn.transaction():  # pre-filled backlog, as after an outage
        for seq in range(THROUGHPUT_EVENTS):
            event_id, msg = message(topic, seq)
            await append_message(conn, event_id, msg)
    arrivals: dict[str, float] = {}
    reader = asyncio.create_task(consume(topic, THROUGHPUT_EVENTS, arrivals))
    await asyncio.sleep(2)  # the reader joins its group first
    started = time.perf_counter()
    relay = start_relay()
    try:
        await asyncio.wait_for(reader, 300)
    finally:
        relay.terminate()
        relay.wait()
    return THROUGHPUT_EVENTS / (max(arrivals.values()) - started)


async def latency(conn: asyncpg.Connection) -> HdrHistogram:
    topic = await new_topic()
    arrivals: dict[str, float] = {}
    committed: dict[str, float] = {}
    reader = asyncio.create_task(consume(topic, LATENCY_EVENTS, arrivals))
    relay = start_relay()
    await asyncio.sleep(3)
    try:
        start = time.perf_counter()
        for seq in range(LATENCY_EVENTS):
            await asyncio.sleep(max(0.0, start + seq / LATENCY_RATE - time.perf_counter()))
            event_id, msg = message(topic, seq)
            async with conn.transaction():
                await append_message(conn, event_id, msg)
            committed[str(event_id)] = time.perf_counter()
        await asyncio.wait_for(reader, 120)
    finally:
        relay.terminate()
        relay.wait()
    histogram = HdrHistogram(1, 60_000_000, 3)
    for event_id, t in committed.items():
        histogram.record_value(max(1, int((arrivals[event_id] - t) * 1e6)))
    return histogram


async def main() -> None:
    apply_migrations(DSN, shared_migrations())
    conn = await asyncpg.connect(DSN)
    try:
        await conn.execute("TRUNCATE outbox")
        rate = await throughput(conn)
        histogram = await latency(conn)
        await conn.execute("TRUNCATE outbox")
    finally:
        await conn.close()
    p = histogram.get_value_at_percentile
    from results import Results

    with Results("outbox") as r:
        r.data.update({"relay_events_per_s": round(rate), "events": THROUGHPUT_EVENTS,
                       "commit_to_consume_p50_ms": p(50) / 1000, "commit_to_consume_p99_ms": p(99) / 1000,
                       "latency_rate_per_s": LATENCY_RATE})
    print(f"bench-outbox on {os.cpu_count()} cores (noisy shared machine; compare runs on one machine only)")
    print(f"  relay throughput   : {rate:,.0f} events/s ({THROUGHPUT_EVENTS} committed rows drained)")
    print(f"  commit->consume    : p50 {p(50) / 1000:.1f} ms, p99 {p(99) / 1000:.1f} ms, "
          f"max {histogram.get_max_value() / 1000:.1f} ms ({LATENCY_EVENTS} events at {LATENCY_RATE:.0f}/s)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    asyncio.run(main())
