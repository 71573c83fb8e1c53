"""Helpers for the shared library's integration tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import orjson
from aiokafka import AIOKafkaConsumer
from ticketing.events import Outgoing
from ticketing.outbox import append_message
from ticketing_testing import REPO_ROOT

WORKER = Path(__file__).with_name("platform_worker.py")


def make_message(topic: str, key: str, seq: int) -> tuple[uuid.UUID, Outgoing]:
    event_id = uuid.uuid4()
    value = f'{{"eventId": "{event_id}", "type": "TestEvent", "key": "{key}", "seq": {seq}}}'.encode()
    return event_id, Outgoing(topic=topic, key=key, value=value, headers=[("id", str(event_id).encode())])


async def write_events(conn: asyncpg.Connection, topic: str, keys: list[str], per_key: int) -> list[uuid.UUID]:
    """One committed transaction per event, keys interleaved, seq increasing per key."""
    ids = []
    for seq in range(per_key):
        for key in keys:
            event_id, message = make_message(topic, key, seq)
            async with conn.transaction():
                await append_message(conn, event_id, message)
            ids.append(event_id)
    return ids


async def read_topic(bootstrap: str, topic: str, until_ids: set[uuid.UUID], timeout: float = 60.0):
    """Every record of `topic` from the start, until all `until_ids` were seen (or timeout)."""
    # No group: a subscribed consumer without group_id is assigned every partition, from the start.
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    records = []
    try:
        while not consumer.assignment():
            await asyncio.sleep(0.05)
        seen: set[uuid.UUID] = set()
        deadline = asyncio.get_running_loop().time() + timeout
        while not until_ids <= seen and asyncio.get_running_loop().time() < deadline:
            for tp_records in (await consumer.getmany(timeout_ms=500)).values():
                for r in tp_records:
                    body = orjson.loads(r.value)
                    records.append((r.partition, r.offset, r.key.decode(), uuid.UUID(body["eventId"]), body["seq"]))
                    seen.add(uuid.UUID(body["eventId"]))
    finally:
        await consumer.stop()
    return records


def start_worker(*args: str) -> subprocess.Popen[bytes]:
    log_dir = REPO_ROOT / "var" / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"platform-test-{args[0]}.log", "ab") as log:
        return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=log, stderr=log)
