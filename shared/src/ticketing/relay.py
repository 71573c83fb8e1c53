"""The outbox relay: publishes committed outbox rows to Kafka, in order, at least once.

Failure modes and what covers them:
- two relays of one service: a session advisory lock elects one; the others wait, so per-key order
  (rows are published in id order, and one booking's rows are written in commit order) holds;
- the broker is down or slow: the batch fails, only the acknowledged prefix is marked, the rest is
  retried after a backoff with a fresh producer;
- the relay dies between the broker's ack and the mark: the rows are sent again (duplicates), and every
  consumer drops them by event id;
- a long transaction commits a row with a lower id later: nothing uses ids as a high-water mark, every
  pass reads all unpublished rows, so the late row is sent on the next wake-up or poll.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass

import asyncpg
import orjson
from aiokafka.errors import KafkaError

from ticketing.kafka import idempotent_producer
from ticketing.logs import log_action
from ticketing.metrics import OUTBOX_LAG_SECONDS, OUTBOX_PUBLISH_ERRORS, OUTBOX_PUBLISHED
from ticketing.outbox import QUERIES

logger = logging.getLogger(__name__)

HOUSEKEEPING_EVERY_SECONDS = 600.0
PUBLISHED_RETENTION_SECONDS = 86400.0


@dataclass(frozen=True)
class RelayConfig:
    service: str
    dsn: str
    bootstrap: str
    batch_size: int = 500
    poll_interval: float = 1.0
    send_timeout: float = 30.0
    # Fault injection for reliability tests (RELIABILITY.md R6): exit hard after the broker acked a
    # batch and before the rows are marked, with this probability. Always 0 outside tests.
    crash_after_publish_probability: float = 0.0


class OutboxRelay:
    def __init__(self, config: RelayConfig) -> None:
        self.config = config
        self._wake = asyncio.Event()
        self._last_housekeeping = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        backoff = 0.5
        while not stop.is_set():
            try:
                await self._lead(stop)
                backoff = 0.5
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, KafkaError,
                    RelayBatchError) as exc:
                OUTBOX_PUBLISH_ERRORS.labels(self.config.service).inc()
                log_action(logger, "outbox.relay_error", str(exc), level=logging.WARNING,
                           error=type(exc).__name__)
                await _sleep_or_stop(stop, backoff)
                backoff = min(backoff * 2, 10.0)

    async def _lead(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(self.config.dsn, timeout=5)
        try:
            while not await conn.fetchval(QUERIES.try_relay_lock):
                if await _sleep_or_stop(stop, self.config.poll_interval * 2):
                    return
            schema = await conn.fetchval(QUERIES.current_schema)
            await conn.add_listener(f"{schema}_outbox", lambda *_: self._wake.set())
            log_action(logger, "outbox.relay_leading", schema=schema)
            producer = idempotent_producer(self.config.bootstrap, client_id=f"{self.config.service}-relay")
            try:
                await asyncio.wait_for(producer.start(), self.config.send_timeout)
                await self._pump(conn, producer, stop)
            finally:
                await producer.stop()
        finally:
            await conn.close(timeout=2)

    async def _pump(self, conn: asyncpg.Connection, producer: object, stop: asyncio.Event) -> None:
        while not stop.is_set():
            sent = await self.publish_batch(conn, producer)
            await self._housekeeping(conn)
            if sent < self.config.batch_size:
                self._wake.clear()
                await _wait_any(self._wake, stop, self.config.poll_interval)

    async def publish_batch(self, conn: asyncpg.Connection, producer: object) -> int:
        failure: BaseException | None = None
        async with conn.transaction():
            rows = await conn.fetch(QUERIES.claim_batch, self.config.batch_size)
            if not rows:
                return 0
            acked, failure = await self._send(producer, rows)
            self._maybe_crash()
            await conn.execute(QUERIES.mark_published, acked)
        OUTBOX_PUBLISHED.labels(self.config.service).inc(len(acked))
        if failure is not None:
            raise RelayBatchError(f"{len(acked)}/{len(rows)} acknowledged: {failure!r}") from failure
        return len(rows)

    async def _send(self, producer: object, rows: list[asyncpg.Record]) -> tuple[list[int], BaseException | None]:
        """Send a batch; return the ids of the acknowledged prefix and the first failure, if any.

        Marking only the prefix keeps first delivery in id order: a row after a failed one is sent
        again next time, after the failed one.
        """
        async def send_all() -> list[object]:
            futures = [await producer.send(  # type: ignore[attr-defined]
                row["topic"], value=bytes(row["payload"]), key=row["message_key"].encode(),
                headers=[(k, v.encode()) for k, v in orjson.loads(row["headers"])]) for row in rows]
            return list(await asyncio.gather(*futures, return_exceptions=True))

        try:
            results = await asyncio.wait_for(send_all(), self.config.send_timeout)
        except Exception as exc:  # any failure to enqueue is a failure of the whole batch
            return [], exc
        acked: list[int] = []
        for row, result in zip(rows, results, strict=True):
            if isinstance(result, BaseException):
                return acked, result
            acked.append(row["id"])
        return acked, None

    def _maybe_crash(self) -> None:
        if self.config.crash_after_publish_probability and \
                random.random() < self.config.crash_after_publish_probability:
            log_action(logger, "outbox.fault_injected", "crashing between publish and mark")
            os._exit(86)

    async def _housekeeping(self, conn: asyncpg.Connection) -> None:
        now = time.monotonic()
        oldest = await conn.fetchval(QUERIES.unpublished_count, column=1)
        lag = 0.0 if oldest is None else max(0.0, time.time() - oldest.timestamp())
        OUTBOX_LAG_SECONDS.labels(self.config.service).set(lag)
        if now - self._last_housekeeping >= HOUSEKEEPING_EVERY_SECONDS:
            self._last_housekeeping = now
            await conn.execute(QUERIES.delete_published_before, PUBLISHED_RETENTION_SECONDS)


class RelayBatchError(Exception):
    """The broker did not acknowledge the whole batch."""


async def _wait_any(event: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep unless stopped; True when stopped."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
        return True
    except TimeoutError:
        return False
