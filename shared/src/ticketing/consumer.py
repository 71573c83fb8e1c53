"""The idempotent consumer: the Kafka loop, retries, dead letters and offset commits.

Per message the inbox (ticketing.inbox) applies the effect and records the event id in ONE database
transaction; the offset is committed to Kafka only after it. A crash anywhere before that commit
redelivers the message, and the inbox row turns the redelivery into a no-op.

Errors:
- a dependency down (ticketing.transient: Postgres, Redis, the network): retried with backoff for as long
  as it takes; the message is fine, so it never goes to the DLQ;
- anything else (undecodable JSON, a contract breach, a CHECK violation): retried `max_attempts` times,
  then sent to `<topic>.DLQ` (ticketing.dead_letter) and the partition moves on.

`batch_transactions=True` applies a whole partition batch in one transaction (ticketing.inbox); any
failure rolls it back and replays it message by message through the per-record path above, so a poison
message costs one replay, reaches the DLQ alone and never takes its neighbours with it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import asyncpg
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.errors import KafkaError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_fixed

from ticketing.dead_letter import DeadLetters
from ticketing.inbox import BatchHandler, Event, Handler, Inbox, PoisonMessage
from ticketing.kafka import client_options
from ticketing.logs import log_action
from ticketing.metrics import CONSUMED, CONSUMER_LAG, CONSUMER_RETRIES, DEAD_LETTERED
from ticketing.retries import backoff, until_stopped
from ticketing.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)
__all__ = ["ConsumerConfig", "IdempotentConsumer", "PoisonMessage"]


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
    # event type -> effect of a run of new events of that type (batch_transactions only); the type must
    # also have a per-event handler: a failed batch is replayed record by record through `handlers`.
    batch_handlers: dict[str, BatchHandler] = field(default_factory=dict)
    # The broker answers a fetch once it has this many bytes for us or this long has passed (aiokafka's
    # defaults: at once, 500 ms). A hot topic applied in batch transactions asks it to wait for a bigger
    # batch: fewer, larger transactions, for a few tens of milliseconds more lag.
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500

    def __post_init__(self) -> None:
        if missing := set(self.batch_handlers) - set(self.handlers):
            raise ValueError(f"batch handlers without a per-event handler for the replay: {sorted(missing)}")


class IdempotentConsumer:
    def __init__(self, config: ConsumerConfig, pool: asyncpg.Pool) -> None:
        self.config = config
        self.inbox = Inbox(config.name, pool, config.decode, config.handlers, config.batch_handlers)
        self.dead_letters = DeadLetters(config.bootstrap, config.name)

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
            fetch_min_bytes=self.config.fetch_min_bytes,
            fetch_max_wait_ms=self.config.fetch_max_wait_ms,
            # A killed member is noticed after this long; the broker's minimum is 6 s.
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )

    async def open(self) -> None:
        """Start the DLQ producer; `run()` does it itself, an outside driver (faust) calls it."""
        await self.dead_letters.start()

    async def close(self) -> None:
        await self.dead_letters.stop()

    async def run(self, stop: asyncio.Event) -> None:
        """Consumes until stopped; a Kafka error costs a new consumer a second later."""
        async for attempt in until_stopped(stop, retry=retry_if_exception_type(KafkaError), wait=wait_fixed(1.0),
                                           after=self._kafka_failed):
            with attempt:
                await self._consume(stop)

    async def _consume(self, stop: asyncio.Event) -> None:
        consumer = self._consumer()
        try:
            await consumer.start()
            await self.open()
            log_action(logger, "consumer.started", consumer=self.config.name, topics=list(self.config.topics))
            await self._loop(consumer, stop)
        finally:
            await consumer.stop()
            await self.close()

    def _kafka_failed(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log_action(logger, "consumer.kafka_error", str(exc), level=logging.WARNING, consumer=self.config.name)

    async def _loop(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                if self.config.batch_transactions:
                    await self.process_batch(records)
                else:
                    for record in records:
                        await self.process(record)
            # One commit for every partition of the fetch, after every effect in it committed: a crash before it
            # redelivers the fetch and the inbox absorbs the repeats. A commit is a broker round trip: one per
            # record would make catching up on a backlog slow, and one per partition batch was a fifth of an
            # idle-type consumer's CPU in make bench-sustained (a hold's event reaches each consumer alone).
            if batches:
                await consumer.commit({tp: records[-1].offset + 1 for tp, records in batches.items()})
            await self._measure_lag(consumer)

    async def _measure_lag(self, consumer: AIOKafkaConsumer) -> None:
        for tp in consumer.assignment():
            highwater = consumer.highwater(tp)
            if highwater is not None:
                lag = max(0, highwater - await consumer.position(tp))
                CONSUMER_LAG.labels(self.config.name, tp.topic, str(tp.partition)).set(lag)

    async def process(self, record: ConsumerRecord) -> None:
        """Apply one record exactly once (or park it in the DLQ); returns when it may be committed."""
        wait = backoff(self.config.backoff_initial, self.config.backoff_max)
        retrying = AsyncRetrying(stop=self._poisoned, wait=wait, after=functools.partial(self._failed, record),
                                 retry_error_callback=_last_error)
        poison: BaseException | None = await retrying(self._apply, record)
        if poison is not None:
            await self.dead_letters.send(record, poison)
            CONSUMED.labels(self.config.name, "dead_lettered").inc()
            DEAD_LETTERED.labels(self.config.name, record.topic).inc()

    async def _apply(self, record: ConsumerRecord) -> None:
        CONSUMED.labels(self.config.name, await self.inbox.apply(record)).inc()

    def _poisoned(self, state: RetryCallState) -> bool:
        """A transient error never is (the message is fine: it waits for its dependency for as long as it
        takes); a PoisonMessage at once; anything else not known to be transient after `max_attempts` attempts
        (transient ones included)."""
        exc = state.outcome.exception() if state.outcome else None
        return not isinstance(exc, TRANSIENT_ERRORS) and (
            isinstance(exc, PoisonMessage) or state.attempt_number >= self.config.max_attempts)

    def _failed(self, record: ConsumerRecord, state: RetryCallState) -> None:
        CONSUMER_RETRIES.labels(self.config.name).inc()
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TRANSIENT_ERRORS):
            log_action(logger, "consumer.retry_transient", str(exc), level=logging.WARNING,
                       consumer=self.config.name, offset=record.offset, error=type(exc).__name__)

    async def process_batch(self, records: list[ConsumerRecord]) -> None:
        try:
            outcomes = await self.inbox.apply_batch(records)
        except Exception as exc:  # replay one by one: the per-record path retries, or dead-letters the culprit
            log_action(logger, "consumer.batch_replayed", str(exc), level=logging.WARNING,
                       consumer=self.config.name, size=len(records), error=type(exc).__name__)
            for record in records:
                await self.process(record)
            return
        for outcome in ("applied", "duplicate", "skipped"):
            CONSUMED.labels(self.config.name, outcome).inc(outcomes.count(outcome))


def _last_error(state: RetryCallState) -> BaseException | None:
    """What a retrying call answers when it gives up: the error of its last attempt."""
    return state.outcome.exception() if state.outcome else None
