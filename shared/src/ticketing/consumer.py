"""The idempotent consumer runner.

Per message: decode, then in ONE database transaction record the event id in `processed_event` and
apply the effect; the offset is committed to Kafka only after that transaction. A crash anywhere
before the commit redelivers the message, and the inbox row turns the redelivery into a no-op.

Errors:
- a dependency down (Postgres, network): retried with backoff for as long as it takes; the message is
  fine, so it never goes to the DLQ;
- anything else (undecodable JSON, a contract breach, a CHECK violation): retried `max_attempts` times,
  then sent to `<topic>.DLQ` with headers naming topic, partition, offset and error, and the partition
  moves on.

`batch_transactions=True` applies a whole partition batch in ONE transaction (one WAL flush instead of
one per message, for hot topics such as voucher-reserved in a flash sale). Exactly-once still holds:
the inbox rows of the whole batch are written by one statement in that transaction (ids recorded
before, or repeated inside the batch, are duplicates and dropped) and the offset is committed after it.
The new events are then applied in offset order; a run of consecutive events of one type that has a
`batch_handlers` entry goes to it in ONE call (a handful of statements per batch instead of several per
message), other types go event by event through `handlers`. Any failure (an undecodable record, a
handler error) rolls the batch back and replays it message by message through the per-record path
above, which uses `handlers` only, so a poison message costs one replay, reaches the DLQ alone and
never takes its neighbours with it. A batch handler must therefore have exactly the semantics of its
type's per-event handler applied to its events in order.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord
from aiokafka.errors import KafkaError

from ticketing.events import dlq_of
from ticketing.kafka import client_options, idempotent_producer
from ticketing.logs import log_action
from ticketing.metrics import CONSUMED, CONSUMER_RETRIES
from ticketing.outbox import QUERIES

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError, asyncio.TimeoutError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError,
    asyncpg.InterfaceError, asyncpg.TooManyConnectionsError, asyncpg.ConnectionDoesNotExistError,
    asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
    asyncpg.InternalClientError,  # a connection the server dropped mid-query, failing its reset on release
)


class Event(Protocol):
    @property
    def eventId(self) -> Any: ...

    @property
    def type(self) -> str: ...


Handler = Callable[[asyncpg.Connection, Any], Awaitable[None]]
BatchHandler = Callable[[asyncpg.Connection, list[Any]], Awaitable[None]]  # new events of one type, in order


@dataclass(frozen=True)
class ConsumerConfig:
    name: str  # also the Kafka group id and the inbox `consumer` column
    topics: Sequence[str]
    bootstrap: str
    decode: Callable[[bytes], Event]
    handlers: dict[str, Handler]  # event type -> effect; other types are skipped
    max_attempts: int = 3
    auto_offset_reset: str = "earliest"  # a new group must not miss events published before it joined
    batch_transactions: bool = False
    backoff_initial: float = 0.2
    backoff_max: float = 5.0
    # Fault injection for RELIABILITY.md R7: a hook run after the effect committed and before the
    # offset commit (tests use it to kill the process there).
    after_effect: Callable[[ConsumerRecord], Awaitable[None]] | None = field(default=None, compare=False)
    # event type -> effect of a run of new events of that type (batch_transactions only); the type must
    # also have a per-event handler: a failed batch is replayed record by record through `handlers`.
    batch_handlers: dict[str, BatchHandler] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if missing := set(self.batch_handlers) - set(self.handlers):
            raise ValueError(f"batch handlers without a per-event handler for the replay: {sorted(missing)}")


class PoisonMessage(Exception):
    """The message cannot be applied however often it is retried."""


class IdempotentConsumer:
    def __init__(self, config: ConsumerConfig, pool: asyncpg.Pool) -> None:
        self.config = config
        self.pool = pool
        self._dlq: AIOKafkaProducer | None = None  # made per run(): a stopped producer cannot restart

    def _dlq_producer(self) -> AIOKafkaProducer:
        return idempotent_producer(self.config.bootstrap, client_id=f"{self.config.name}-dlq")

    def _consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            *self.config.topics,
            **client_options(self.config.bootstrap),
            group_id=self.config.name,
            client_id=self.config.name,
            enable_auto_commit=False,
            auto_offset_reset=self.config.auto_offset_reset,
            isolation_level="read_committed",
            max_poll_records=200,
            # A killed member is noticed after this long; the broker's minimum is 6 s.
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )

    async def open(self) -> None:
        """Start the DLQ producer; `run()` does it itself, an outside driver (faust) calls it."""
        self._dlq = self._dlq_producer()
        await self._dlq.start()

    async def close(self) -> None:
        if self._dlq is not None:
            await self._dlq.stop()
            self._dlq = None

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            consumer = self._consumer()
            try:
                await consumer.start()
                await self.open()
                log_action(logger, "consumer.started", consumer=self.config.name,
                           topics=list(self.config.topics))
                await self._loop(consumer, stop)
            except KafkaError as exc:
                log_action(logger, "consumer.kafka_error", str(exc), level=logging.WARNING,
                           consumer=self.config.name)
                await asyncio.sleep(1.0)
            finally:
                await consumer.stop()
                await self.close()

    async def _loop(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=500)
            for tp, records in batches.items():
                if self.config.batch_transactions:
                    await self.process_batch(records)
                else:
                    await self._process_each(records)
                # One commit per partition batch, after every effect in it committed: a crash before it
                # redelivers the batch and the inbox absorbs the repeats (a commit per record would cost a
                # broker round trip per event and make catching up on a backlog slow).
                await consumer.commit({tp: records[-1].offset + 1})

    async def _process_each(self, records: list[ConsumerRecord]) -> None:
        for record in records:
            await self.process(record)
            if self.config.after_effect is not None:
                await self.config.after_effect(record)

    async def process(self, record: ConsumerRecord) -> None:
        """Apply one record exactly once (or park it in the DLQ); returns when it may be committed."""
        attempt, delay = 0, self.config.backoff_initial
        while True:
            attempt += 1
            try:
                outcome = await self._apply(record)
                CONSUMED.labels(self.config.name, outcome).inc()
                return
            except TRANSIENT_ERRORS as exc:
                CONSUMER_RETRIES.labels(self.config.name).inc()
                log_action(logger, "consumer.retry_transient", str(exc), level=logging.WARNING,
                           consumer=self.config.name, offset=record.offset, error=type(exc).__name__)
            except Exception as exc:  # poison candidates: anything not known to be transient
                CONSUMER_RETRIES.labels(self.config.name).inc()
                if isinstance(exc, PoisonMessage) or attempt >= self.config.max_attempts:
                    await self._dead_letter(record, exc)
                    CONSUMED.labels(self.config.name, "dead_lettered").inc()
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.config.backoff_max)

    async def process_batch(self, records: list[ConsumerRecord]) -> None:
        try:
            outcomes = await self._apply_batch(records)
        except Exception as exc:  # replay one by one: the per-record path retries, or dead-letters the culprit
            log_action(logger, "consumer.batch_replayed", str(exc), level=logging.WARNING,
                       consumer=self.config.name, size=len(records), error=type(exc).__name__)
            for record in records:
                await self.process(record)
            return
        for outcome in ("applied", "duplicate", "skipped"):
            CONSUMED.labels(self.config.name, outcome).inc(outcomes.count(outcome))

    async def _apply_batch(self, records: list[ConsumerRecord]) -> list[str]:
        """One transaction: the inbox rows in one statement, then each run of same-type new events."""
        events = [self.config.decode(record.value) for record in records]  # ValueError: the replay DLQs it
        wanted = [e for e in events if e.type in self.config.handlers]
        fresh: list[Event] = []
        if wanted:
            async with self.pool.acquire() as conn, conn.transaction():
                fresh = await self._mark_batch(conn, wanted)  # type: ignore[arg-type]
                for event_type, run in itertools.groupby(fresh, key=lambda e: e.type):
                    await self._apply_run(conn, event_type, list(run))  # type: ignore[arg-type]
        outcomes = ["applied"] * len(fresh) + ["duplicate"] * (len(wanted) - len(fresh))
        outcomes += ["skipped"] * (len(events) - len(wanted))
        log_action(logger, "consumer.batch_applied", consumer=self.config.name, size=len(records),
                   applied=len(fresh), duplicates=len(wanted) - len(fresh), skipped=len(events) - len(wanted))
        return outcomes

    async def _mark_batch(self, conn: asyncpg.Connection, events: list[Event]) -> list[Event]:
        """Inbox rows for every event in one statement; the events recorded now, first occurrence only."""
        ids = list(dict.fromkeys(_event_uuid(e) for e in events))
        new = {row["event_id"] for row in await conn.fetch(QUERIES.mark_processed_many, self.config.name, ids)}
        fresh: list[Event] = []
        for event in events:
            if (event_id := _event_uuid(event)) in new:
                new.discard(event_id)  # a second copy in this batch is a duplicate
                fresh.append(event)
            else:
                log_action(logger, "consumer.duplicate", consumer=self.config.name, event_id=str(event_id))
        return fresh

    async def _apply_run(self, conn: asyncpg.Connection, event_type: str, events: list[Event]) -> None:
        batch_handler = self.config.batch_handlers.get(event_type)
        if batch_handler is not None:
            await batch_handler(conn, events)
            return
        handler = self.config.handlers[event_type]
        for event in events:
            await handler(conn, event)

    async def _apply_in(self, conn: asyncpg.Connection, event: Event) -> str:
        """Inbox row + effect, inside the caller's transaction."""
        handler = self.config.handlers.get(event.type)
        if handler is None:
            return "skipped"
        if await conn.fetchval(QUERIES.mark_processed, self.config.name, event.eventId) is None:
            log_action(logger, "consumer.duplicate", consumer=self.config.name, event_id=str(event.eventId))
            return "duplicate"
        await handler(conn, event)
        log_action(logger, "consumer.applied", consumer=self.config.name, event_type=event.type,
                   event_id=str(event.eventId))
        return "applied"

    async def _apply(self, record: ConsumerRecord) -> str:
        try:
            event = self.config.decode(record.value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise PoisonMessage(f"undecodable: {exc}") from exc
        if event.type not in self.config.handlers:
            return "skipped"
        async with self.pool.acquire() as conn, conn.transaction():
            return await self._apply_in(conn, event)  # type: ignore[arg-type]  # a pool proxy is a Connection

    async def _dead_letter(self, record: ConsumerRecord, error: BaseException) -> None:
        headers = [
            *(record.headers or []),
            ("dlq.original.topic", record.topic.encode()),
            ("dlq.original.partition", str(record.partition).encode()),
            ("dlq.original.offset", str(record.offset).encode()),
            ("dlq.error", f"{type(error).__name__}: {error}"[:1000].encode()),
            ("dlq.consumer", self.config.name.encode()),
        ]
        if self._dlq is None:
            raise RuntimeError("dead-lettering needs a running consumer (run())")
        await self._dlq.send_and_wait(dlq_of(record.topic), value=record.value, key=record.key,
                                      headers=headers)
        log_action(logger, "consumer.dead_lettered", str(error), level=logging.ERROR,
                   consumer=self.config.name, topic=record.topic, partition=record.partition,
                   offset=record.offset)


def _event_uuid(event: Event) -> uuid.UUID:
    """The inbox key; asyncpg returns its own UUID subclass, pydantic a uuid.UUID (equal and same hash)."""
    value = event.eventId
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
