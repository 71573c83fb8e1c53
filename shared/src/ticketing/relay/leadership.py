"""One relay leads per service schema, woken by LISTEN/NOTIFY with a polling fallback.

The others wait on the session advisory lock (`try_relay_lock`), trying again every two polls; the lock goes
with the leader's connection, so a leader killed or cut off from Postgres hands over at once. Everything the
relay meets is retried after a backoff (a row itself at fault is quarantined, never raised): the leader then
starts again with a new connection and a fresh producer.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass

import asyncpg
from aiokafka.errors import KafkaError
from tenacity import RetryCallState, retry_if_exception_type

from ticketing.logs import log_action
from ticketing.metrics import OUTBOX_PUBLISH_ERRORS
from ticketing.outbox import QUERIES
from ticketing.relay.batches import BatchOutcome, settle
from ticketing.relay.housekeeping import Housekeeping
from ticketing.relay.pump import RelayBatchError, pump
from ticketing.relay.sending import send, started_producer
from ticketing.retries import backoff, sleep_or_stop, until_stopped
from ticketing.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)
RELAY_ERRORS = (*TRANSIENT_ERRORS, asyncpg.PostgresError, KafkaError, RelayBatchError)


@dataclass(frozen=True)
class RelayConfig:
    service: str
    dsn: str
    bootstrap: str
    batch_size: int = 500
    poll_interval: float = 1.0
    send_timeout: float = 30.0


class OutboxRelay:
    def __init__(self, config: RelayConfig) -> None:
        self.config = config
        self.housekeeping = Housekeeping(config.service, refresh_seconds=config.poll_interval)
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Leads (or waits to) until stopped; a failure costs a new connection after 0.5 s doubling up to 10 s."""
        async for attempt in until_stopped(stop, retry=retry_if_exception_type(RELAY_ERRORS), wait=backoff(0.5, 10.0),
                                           after=self._failed):
            with attempt:
                await self._lead(stop)

    def _failed(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        OUTBOX_PUBLISH_ERRORS.labels(self.config.service).inc()
        log_action(logger, "outbox.relay_error", str(exc), level=logging.WARNING, error=type(exc).__name__)

    async def _lead(self, stop: asyncio.Event) -> None:
        # Named with its process: an operator (and the fault run) finds the leader's process in pg_stat_activity,
        # also behind a balancer or a pooler, where the backend's client address is the balancer's.
        conn = await asyncpg.connect(self.config.dsn, timeout=5, server_settings={
            "application_name": f"{self.config.service} outbox relay pid {os.getpid()}"})
        try:
            while not await conn.fetchval(QUERIES.try_relay_lock):
                if await sleep_or_stop(stop, self.config.poll_interval * 2):
                    return
            schema = await conn.fetchval(QUERIES.current_schema)
            await conn.add_listener(f"{schema}_outbox", lambda *_: self._wake.set())
            log_action(logger, "outbox.relay_leading", schema=schema)
            while not stop.is_set():  # one producer each time round, until it must be renewed
                async with started_producer(self.config.service, self.config.bootstrap,
                                            self.config.send_timeout) as producer:
                    await pump(self, conn, producer, stop)
        finally:
            await conn.close(timeout=2)

    async def send_batch(self, producer: object, rows: list[asyncpg.Record]) -> BatchOutcome:
        """Send a batch and sort its rows by the broker's answers (the fault tests crash right after it)."""
        return settle(rows, await send(producer, rows, self.config.send_timeout))

    def expect_work(self) -> None:
        """Called before a claim that reads every row in line: a commit notified after it wakes the next wait."""
        self._wake.clear()

    async def wait_for_work(self, stop: asyncio.Event) -> None:
        """Until a commit wakes the relay (NOTIFY), it is stopped, or a poll interval has passed."""
        await _wait_any(self._wake, stop, self.config.poll_interval)


async def _wait_any(event: asyncio.Event, stop: asyncio.Event, timeout: float) -> None:
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
