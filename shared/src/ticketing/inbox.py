"""The inbox: a consumed event applied exactly once, its id recorded in the same transaction as its effect.

`apply(record)`: ONE transaction: the event id into `processed_event` (a repeat finds it there: a
duplicate, nothing happens) and the handler's effect. `apply_batch(records)`: a whole partition batch in
ONE transaction (one WAL flush instead of one per message, for hot topics): the inbox rows of the batch
in one statement (ids recorded before, or repeated inside the batch, are duplicates and dropped), then the
new events in offset order; a run of consecutive events of one type that has a batch handler goes to it in
ONE call, other types event by event. A batch handler must have exactly the semantics of its type's
per-event handler applied to its events in order: a failed batch is replayed record by record.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import asyncpg
import orjson
from aiokafka import ConsumerRecord

from ticketing import request_id, tracing
from ticketing.envelope import TYPE_HEADER
from ticketing.logs import log_action
from ticketing.outbox import QUERIES

logger = logging.getLogger(__name__)


class Event(Protocol):
    @property
    def eventId(self) -> Any: ...

    @property
    def type(self) -> str: ...


Handler = Callable[[asyncpg.Connection, Any], Awaitable[None]]
BatchHandler = Callable[[asyncpg.Connection, list[Any]], Awaitable[None]]  # new events of one type, in order


class PoisonMessage(Exception):
    """The message cannot be applied however often it is retried."""


class Inbox:
    def __init__(self, consumer: str, pool: asyncpg.Pool, decode: Callable[[bytes], Event],
                 handlers: dict[str, Handler], batch_handlers: dict[str, BatchHandler]) -> None:
        self.consumer, self.pool, self.decode = consumer, pool, decode
        self.handlers, self.batch_handlers = handlers, batch_handlers

    async def apply(self, record: ConsumerRecord) -> str:
        """"applied", "duplicate" or "skipped" (a type this consumer does not handle). The event's request
        id (its `x-request-id` header) is the current one meanwhile: in the logs, and on the events its
        effect writes; with tracing on, so is a consumer span, the child of the event's `traceparent`.
        A record whose type header names a type this consumer does not handle is skipped before anything
        else: no decoding, no span, no transaction."""
        if not self.wanted(record):
            return "skipped"
        with self._caused_by(record):
            return await self._apply(record)

    @contextmanager
    def _caused_by(self, record: ConsumerRecord) -> Iterator[None]:
        """The record's request id as the current one and, with tracing on, its consumer span."""
        rid = _header(record, request_id.HEADER)
        token = request_id.CURRENT.set(rid)
        try:
            with tracing.consumer_span(record, self.consumer, rid):
                yield
        finally:
            request_id.CURRENT.reset(token)

    async def _apply(self, record: ConsumerRecord) -> str:
        try:
            event = self.decode(record.value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            if self._not_ours(record.value):
                return "skipped"
            raise PoisonMessage(f"undecodable: {exc}") from exc
        handler = self.handlers.get(event.type)
        if handler is None:
            return "skipped"
        async with self.pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(QUERIES.mark_processed, self.consumer, event.eventId) is None:
                log_action(logger, "consumer.duplicate", consumer=self.consumer, event_id=str(event.eventId))
                return "duplicate"
            await handler(conn, event)  # type: ignore[arg-type]  # a pool proxy is a Connection
        log_action(logger, "consumer.applied", consumer=self.consumer, event_type=event.type,
                   event_id=str(event.eventId))
        return "applied"

    async def apply_batch(self, records: list[ConsumerRecord]) -> list[str]:
        """One outcome per record; raises on any failure (nothing of the batch is then written). Records of a
        type this consumer does not handle (by their type header) are skipped undecoded."""
        events = [self._decoded(r.value) if self.wanted(r) else None for r in records]  # ValueError: replay DLQs it
        wanted = [e for e in events if e is not None and e.type in self.handlers]
        origin = {id(e): r for e, r in zip(events, records, strict=True) if e is not None}
        fresh: list[Event] = []
        if wanted:
            async with self.pool.acquire() as conn, conn.transaction():
                fresh = await self._mark(conn, wanted)  # type: ignore[arg-type]
                for event_type, run in itertools.groupby(fresh, key=lambda e: e.type):
                    await self._apply_run(conn, event_type, [(e, origin[id(e)]) for e in run])  # type: ignore[arg-type]
        outcomes = ["applied"] * len(fresh) + ["duplicate"] * (len(wanted) - len(fresh))
        outcomes += ["skipped"] * (len(events) - len(wanted))
        log_action(logger, "consumer.batch_applied", consumer=self.consumer, size=len(records),
                   applied=len(fresh), duplicates=len(wanted) - len(fresh), skipped=len(events) - len(wanted))
        return outcomes

    def wanted(self, record: ConsumerRecord) -> bool:
        """False when the record's type header names a type without a handler here; a record without the
        header (an older producer) is decoded to find out."""
        kind = _header(record, TYPE_HEADER)
        return kind is None or kind in self.handlers

    def _decoded(self, value: bytes) -> Event | None:
        """The event; None for one this consumer has no handler for and cannot decode (a type added to the
        contract after this consumer was built): skipped, as the contract says, never dead-lettered."""
        try:
            return self.decode(value)
        except ValueError:
            if self._not_ours(value):
                return None
            raise

    def _not_ours(self, value: bytes) -> bool:
        """An undecodable message is poison only when its type is one this consumer handles."""
        try:
            kind = orjson.loads(value).get("type")
        except (orjson.JSONDecodeError, AttributeError):
            return False  # not a JSON object: nobody can read it, a poison message
        return isinstance(kind, str) and kind not in self.handlers

    async def _mark(self, conn: asyncpg.Connection, events: list[Event]) -> list[Event]:
        """Inbox rows for every event in one statement; the events recorded now, first occurrence only."""
        ids = list(dict.fromkeys(_event_uuid(e) for e in events))
        new = {row["event_id"] for row in await conn.fetch(QUERIES.mark_processed_many, self.consumer, ids)}
        fresh: list[Event] = []
        for event in events:
            if (event_id := _event_uuid(event)) in new:
                new.discard(event_id)  # a second copy in this batch is a duplicate
                fresh.append(event)
            else:
                log_action(logger, "consumer.duplicate", consumer=self.consumer, event_id=str(event_id))
        return fresh

    async def _apply_run(self, conn: asyncpg.Connection, event_type: str,
                         run: list[tuple[Event, ConsumerRecord]]) -> None:
        """A batch handler takes the run in one call; otherwise each event is applied as `apply` would, its own
        request id current (the events its effect writes carry it) and its own consumer span."""
        batch_handler = self.batch_handlers.get(event_type)
        if batch_handler is not None:
            await batch_handler(conn, [event for event, _ in run])
            return
        for event, record in run:
            with self._caused_by(record):
                await self.handlers[event_type](conn, event)


def _header(record: ConsumerRecord, name: str) -> str | None:
    value = next((v for k, v in record.headers or () if k == name), None)
    return None if value is None else value.decode(errors="replace")


def _event_uuid(event: Event) -> uuid.UUID:
    """The inbox key; asyncpg returns its own UUID subclass, pydantic a uuid.UUID (equal and same hash)."""
    value = event.eventId
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
