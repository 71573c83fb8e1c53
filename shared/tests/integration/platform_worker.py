"""A relay or consumer process for the platform's fault tests (R6, R7), with faults injected here.

    python platform_worker.py relay   --dsn D --bootstrap B --crash-p 0.3
    python platform_worker.py consume --dsn D --bootstrap B --topic T --group G --crash-p 0.2

`consume` applies each TestEvent by inserting a row into `test_effect` (no unique constraint: a
double effect would show as two rows) and dies with SIGKILL after the effect committed and before the
offset commit: with probability crash-p per record, or right after the crash-after-th record.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import uuid

from pydantic import BaseModel
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.db import create_pool
from ticketing.logs import configure_logging
from ticketing.relay import OutboxRelay, RelayConfig


class TestEvent(BaseModel):
    eventId: uuid.UUID
    type: str
    key: str
    seq: int


async def apply_effect(conn, event: TestEvent) -> None:  # type: ignore[no-untyped-def]
    await conn.execute("INSERT INTO test_effect (event_id, message_key, seq) VALUES ($1, $2, $3)",
                       event.eventId, event.key, event.seq)


class CrashingRelay(OutboxRelay):
    """Exits hard after the broker acknowledged a batch and before its rows are marked published."""

    def __init__(self, config: RelayConfig, crash_p: float) -> None:
        super().__init__(config)
        self.crash_p = crash_p

    async def send_batch(self, producer, rows):  # type: ignore[no-untyped-def]
        outcome = await super().send_batch(producer, rows)
        if self.crash_p and random.random() < self.crash_p:
            os._exit(86)  # the exit code R6's test counts
        return outcome


class CrashingConsumer(IdempotentConsumer):
    """Dies with SIGKILL after a record's effect committed and before its offset is committed."""

    def __init__(self, config: ConsumerConfig, pool, args: argparse.Namespace) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config, pool)
        self.args, self.seen = args, 0

    async def process(self, record) -> None:  # type: ignore[no-untyped-def]
        await super().process(record)
        self.seen += 1
        if random.random() < self.args.crash_p or self.seen == self.args.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)


def consumer_config(args: argparse.Namespace) -> ConsumerConfig:
    return ConsumerConfig(name=args.group, topics=[args.topic], bootstrap=args.bootstrap,
                          decode=TestEvent.model_validate_json, handlers={"TestEvent": apply_effect})


async def main(args: argparse.Namespace) -> None:
    configure_logging(f"platform-test-{args.role}", "INFO")
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    if args.role == "relay":
        config = RelayConfig(service="platform-test", dsn=args.dsn, bootstrap=args.bootstrap,
                             batch_size=args.batch_size, poll_interval=0.2)
        await CrashingRelay(config, args.crash_p).run(stop)
        return
    pool = await create_pool(args.dsn, min_size=1, max_size=4)
    try:
        await CrashingConsumer(consumer_config(args), pool, args).run(stop)
    finally:
        await pool.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["relay", "consume"])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic")
    parser.add_argument("--group")
    parser.add_argument("--crash-p", type=float, default=0.0)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--crash-after", type=int, default=0, help="consume: SIGKILL after the N-th record")
    asyncio.run(main(parser.parse_args()))
    sys.exit(0)
