"""The outbox relay: publishes committed outbox rows to Kafka, in order, at least once.

Failure modes and what covers them:
- two relays of one service: a session advisory lock elects one; the others wait, so per-key order
  (rows are published in id order, and one booking's rows are written in commit order) holds;
- the broker is down, slow, or short of replicas, a topic does not exist yet: the batch stops at the first
  row that failed, only the rows before it are marked, the rest is retried after a backoff with a fresh
  producer (the rows before it are not sent again);
- the relay dies between the broker's ack and the mark: the rows are sent again (duplicates), and every
  consumer drops them by event id;
- a long transaction commits a row with a lower id later: nothing uses ids as a high-water mark, every
  pass reads all unpublished rows, so the late row is sent on the next wake-up or poll;
- Kafka refuses one row for good (over the producer's max_request_size, refused at enqueue, or over the
  topic's max.message.bytes, refused by the broker; a topic name Kafka cannot have; headers that are not
  [name, text] pairs): no retry can fix it, and before quarantine it stopped the relay for good. The row is
  quarantined: kept unpublished with its error and time (`quarantined_at`, `quarantine_error`), logged as
  action=outbox.quarantined at ERROR, counted in outbox_quarantined_total, and skipped; the rows around
  it are marked as usual, so none is sent twice. `ticketing outbox replay` puts it back in line once the
  cause is fixed (a topic limit raised, the row mended); it then goes out before the rows held behind it.
  Only the refusals in REFUSED_FOR_GOOD quarantine; anything else, unknown errors included, is a retry.

Per-key order around a quarantined row: the later rows of its key (same topic and message key) are held
back, unpublished, until the quarantined row is replayed and published (claim_batch leaves them out);
every other key goes on. Publishing past it would break the one promise consumers build on, per-key order:
booking-events is keyed by bookingId and its consumers apply a booking's events as a chain (hold-service's
SeatsHeld, then payment's CheckoutStarted and PaymentSucceeded, then BookingConfirmed). A consumer handed
BookingConfirmed without the SeatsHeld before it sees a gap it cannot tell from a lost event, and the
SeatsHeld replayed afterwards would arrive after the confirmation, as a stale event that a correct consumer
ignores (a stale event never undoes a later state), so it would be lost for good. Holding back delays one
booking until an operator acts, and shows: the counter, the quarantine gauge, and `ticketing outbox
quarantined` lists each quarantined row with the number of rows waiting behind it. To give a row up
instead, an operator marks it published by hand, knowing the consumers will never see it.

A row refused by the broker (not at enqueue) must not be overtaken by the later rows of its key either,
and by the time the broker answers they could be on their way. The broker refuses a record for its size
only above the topic's max.message.bytes (1 MiB by default, never set below LARGE_ROW_BYTES here), so the
later rows of a key are not sent in the same pass as a row of that key larger than LARGE_ROW_BYTES: they
wait for the broker's answer about it and go out in the next pass, right after it (or stay held back if
it was quarantined). Nearly all rows are small and pipelined as before. Relying on the idempotent producer
instead would not do: after a refused batch the broker turns away the producer's later batches of that
partition (OUT_OF_ORDER_SEQUENCE_NUMBER: a gap in the sequence numbers) only when it already holds a
sequence of that producer there, not when the refused record was the producer's first, as after a
restart. Rows of other keys turned away that way are sent again in the next pass, by a fresh producer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import orjson
from aiokafka.errors import (
    InvalidTopicError,
    KafkaError,
    MessageSizeTooLargeError,
    OutOfOrderSequenceNumber,
    RecordListTooLargeError,
)

from ticketing.job_metrics import JobWatch
from ticketing.kafka import idempotent_producer
from ticketing.logs import log_action
from ticketing.metrics import (
    OUTBOX_BACKLOG,
    OUTBOX_LAG_SECONDS,
    OUTBOX_PUBLISH_ERRORS,
    OUTBOX_PUBLISHED,
    OUTBOX_QUARANTINED,
    OUTBOX_QUARANTINED_ROWS,
)
from ticketing.outbox import QUERIES
from ticketing.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)

HOUSEKEEPING_EVERY_SECONDS = 600.0
PUBLISHED_RETENTION_SECONDS = 86400.0
# Kafka's rule for topic names; the broker answers INVALID_TOPIC_EXCEPTION to others, but only inside a
# metadata answer that aiokafka turns into a wait and a timeout, indistinguishable from a missing topic.
LEGAL_TOPIC = re.compile(r"(?!\.\.?$)[a-zA-Z0-9._-]{1,249}")
# Rows above this may be refused by the broker for their size, so the later rows of their key wait for its
# answer (module docstring). aiokafka's batch size: a larger record travels alone in its batch.
LARGE_ROW_BYTES = 16 * 1024


class UnpublishableRow(Exception):
    """The row cannot be made into a Kafka record at all (topic name, headers)."""


# Refusals that depend on the record alone: no retry, no fresh producer, no broker restart changes them.
REFUSED_FOR_GOOD: tuple[type[BaseException], ...] = (
    MessageSizeTooLargeError, RecordListTooLargeError, InvalidTopicError, UnpublishableRow)


@dataclass(frozen=True)
class RelayConfig:
    service: str
    dsn: str
    bootstrap: str
    batch_size: int = 500
    poll_interval: float = 1.0
    send_timeout: float = 30.0


@dataclass
class BatchOutcome:
    claimed: int = 0
    # Rows not sent in this pass: behind a quarantined row, or behind a large row awaiting its answer.
    deferred: int = 0
    published: list[int] = field(default_factory=list)
    quarantined: list[tuple[asyncpg.Record, BaseException]] = field(default_factory=list)
    # The first retryable failure: its row and every row after it are left for the next pass.
    failure: BaseException | None = None
    # The broker refused a record: this producer's sequence of that partition has a gap.
    renew_producer: bool = False


class OutboxRelay:
    def __init__(self, config: RelayConfig) -> None:
        self.config = config
        self._wake = asyncio.Event()
        self._last_housekeeping = 0.0
        # The outbox retention, a periodic job of the leading relay (a standby reports its start).
        self._retention = JobWatch(config.service, "outbox-retention", HOUSEKEEPING_EVERY_SECONDS)

    async def run(self, stop: asyncio.Event) -> None:
        backoff = 0.5
        while not stop.is_set():
            try:
                await self._lead(stop)
                backoff = 0.5
            except (*TRANSIENT_ERRORS, asyncpg.PostgresError, KafkaError, RelayBatchError) as exc:
                # Everything the relay meets is retried: a row itself at fault is quarantined, not raised.
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
            while not stop.is_set():
                await self._produce(conn, stop)
        finally:
            await conn.close(timeout=2)

    async def _produce(self, conn: asyncpg.Connection, stop: asyncio.Event) -> None:
        """One producer, until stopped or until it must be renewed."""
        producer = idempotent_producer(self.config.bootstrap, client_id=f"{self.config.service}-relay")
        try:
            await asyncio.wait_for(producer.start(), self.config.send_timeout)
            await self._pump(conn, producer, stop)
        finally:
            await producer.stop()

    async def _pump(self, conn: asyncpg.Connection, producer: object, stop: asyncio.Event) -> None:
        while not stop.is_set():
            outcome = await self.publish_batch(conn, producer)
            await self._housekeeping(conn)
            if outcome.renew_producer:
                return
            if outcome.claimed < self.config.batch_size and not outcome.deferred:
                self._wake.clear()
                await _wait_any(self._wake, stop, self.config.poll_interval)

    async def publish_batch(self, conn: asyncpg.Connection, producer: object) -> BatchOutcome:
        async with conn.transaction():
            rows = await conn.fetch(QUERIES.claim_batch, self.config.batch_size)
            if not rows:
                return BatchOutcome()
            outcome = await self._send(producer, rows)
            await conn.execute(QUERIES.mark_published, outcome.published)
            if outcome.quarantined:
                await conn.execute(QUERIES.quarantine, [row["id"] for row, _ in outcome.quarantined],
                                   [_describe(exc) for _, exc in outcome.quarantined])
        OUTBOX_PUBLISHED.labels(self.config.service).inc(len(outcome.published))
        for row, exc in outcome.quarantined:  # after COMMIT: the log never names a row still in line
            OUTBOX_QUARANTINED.labels(self.config.service).inc()
            log_action(logger, "outbox.quarantined", f"Kafka refused outbox row {row['id']} for good",
                       level=logging.ERROR, outbox_id=row["id"], topic=row["topic"], key=row["message_key"],
                       error=_describe(exc))
        if outcome.failure is not None:
            raise RelayBatchError(f"{len(outcome.published)}/{len(rows)} acknowledged: "
                                  f"{outcome.failure!r}") from outcome.failure
        return outcome

    async def _send(self, producer: object, rows: list[asyncpg.Record]) -> BatchOutcome:
        """Enqueue the batch in id order, wait for the broker, and sort the rows into outcomes.

        A row refused at enqueue is not sent, nor are the later rows of its key, nor those of a large
        row's key (sent next pass); a retryable failure at enqueue stops the enqueueing there. Everything
        is bounded by `send_timeout`.
        """
        deadline = asyncio.get_running_loop().time() + self.config.send_timeout
        sent: list[tuple[asyncpg.Record, _Sent]] = []
        waiting: set[tuple[str, str]] = set()  # keys whose later rows go next pass
        try:
            async with asyncio.timeout_at(deadline):
                for row in rows:
                    if waiting and _key(row) in waiting:  # `waiting and`: it is nearly always empty
                        sent.append((row, None))
                        continue
                    try:
                        sent.append((row, await producer.send(**_record(row))))  # type: ignore[attr-defined]
                        if len(row["payload"]) > LARGE_ROW_BYTES:
                            waiting.add(_key(row))
                    except REFUSED_FOR_GOOD as exc:
                        waiting.add(_key(row))
                        sent.append((row, exc))
                    except Exception as exc:
                        sent.append((row, exc))
                        break
        except TimeoutError as exc:
            if len(sent) < len(rows):  # the row being enqueued when time ran out (metadata wait, full buffer)
                sent.append((rows[len(sent)], exc))
        futures = [state for _, state in sent if isinstance(state, asyncio.Future)]
        if futures:
            await asyncio.wait(futures, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        return _settle(rows, sent)

    async def _housekeeping(self, conn: asyncpg.Connection) -> None:
        now = time.monotonic()
        counts = await conn.fetchrow(QUERIES.unpublished_count)
        assert counts is not None  # an aggregate always returns its row
        oldest = counts["oldest"]
        lag = 0.0 if oldest is None else max(0.0, time.time() - oldest.timestamp())
        OUTBOX_LAG_SECONDS.labels(self.config.service).set(lag)
        OUTBOX_BACKLOG.labels(self.config.service).set(counts["n"])
        OUTBOX_QUARANTINED_ROWS.labels(self.config.service).set(counts["quarantined"])
        if now - self._last_housekeeping >= HOUSEKEEPING_EVERY_SECONDS:
            self._last_housekeeping = now
            try:
                await conn.execute(QUERIES.delete_published_before, PUBLISHED_RETENTION_SECONDS)
            except Exception:
                self._retention.failed()
                raise
            self._retention.succeeded()


# What became of one row's send: a delivery future, the exception that stopped it, or None (not sent now).
_Sent = asyncio.Future[Any] | BaseException | None


def _settle(rows: list[asyncpg.Record], sent: list[tuple[asyncpg.Record, _Sent]]) -> BatchOutcome:
    """Walk the batch in id order: mark the acknowledged rows, quarantine the refused ones (holding back
    the rest of their key), stop at the first retryable failure."""
    outcome = BatchOutcome(claimed=len(rows))
    held: set[tuple[str, str]] = set()
    errors = [(row, state, _error_of(state)) for row, state in sent]  # every future's outcome retrieved
    for row, state, error in errors:
        if state is None:
            outcome.deferred += 1
        elif error is None:
            outcome.published.append(row["id"])
        elif held and _key(row) in held:
            continue  # a later row of a quarantined key that did not get through: it waits behind it
        elif isinstance(error, REFUSED_FOR_GOOD):
            outcome.quarantined.append((row, error))
            held.add(_key(row))
            outcome.renew_producer |= isinstance(state, asyncio.Future)
        elif outcome.renew_producer and isinstance(error, OutOfOrderSequenceNumber):
            continue  # refused only for coming after a refused record; a fresh producer sends it next pass
        else:
            outcome.failure = error
            break
    return outcome


def _key(row: asyncpg.Record) -> tuple[str, str]:
    """What Kafka orders by: the topic and the message key (one partition)."""
    return row["topic"], row["message_key"]


def _error_of(state: _Sent) -> BaseException | None:
    if state is None or isinstance(state, BaseException):
        return state
    if not state.done():
        return TimeoutError("not acknowledged within send_timeout")
    if state.cancelled():
        return asyncio.CancelledError()
    return state.exception()


def _record(row: asyncpg.Record) -> dict[str, Any]:
    """The row as keyword arguments of `producer.send`; UnpublishableRow if Kafka could never take it."""
    topic = row["topic"]
    if not _legal_topic(topic):
        raise UnpublishableRow(f"{topic!r} is not a legal Kafka topic name")
    return {"topic": topic, "value": bytes(row["payload"]), "key": row["message_key"].encode(),
            "headers": _headers(row["headers"])}


@functools.lru_cache(maxsize=256)
def _legal_topic(topic: str) -> bool:
    return LEGAL_TOPIC.fullmatch(topic) is not None


def _headers(text: str) -> list[tuple[str, bytes]]:
    """The `headers` column ([[name, value], ...], as ticketing.outbox writes it) as Kafka headers."""
    pairs = orjson.loads(text)
    if type(pairs) is not list:
        raise UnpublishableRow(f"headers are not a list of [name, text] pairs: {text[:200]}")
    headers = []
    for pair in pairs:  # a plain loop: this runs for every event (a generator costs a little more)
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str or type(pair[1]) is not str:
            raise UnpublishableRow(f"headers are not a list of [name, text] pairs: {text[:200]}")
        headers.append((pair[0], pair[1].encode()))
    return headers


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


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
