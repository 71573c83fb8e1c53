"""The outbox writer: events join the business transaction, never a request path to Kafka.

Also the operator's side of the quarantine (rows Kafka refused for good, set aside by ticketing.relay):
list them, put one back in line (`ticketing outbox quarantined|replay`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

import asyncpg
import orjson
from pydantic import BaseModel

from ticketing.db import Queries, sql_dir
from ticketing.envelope import Outgoing, caused_by
from ticketing.events import outgoing

QUERIES = Queries.load(sql_dir(__file__) / "outbox.sql")


async def append(conn: asyncpg.Connection, event: BaseModel) -> None:
    """Write `event` to this schema's outbox; must run inside the transaction of the state change."""
    await append_message(conn, event.eventId, outgoing(event))  # type: ignore[attr-defined,arg-type]


async def append_message(conn: asyncpg.Connection, event_id: uuid.UUID, message: Outgoing) -> None:
    """The message, with the headers naming its cause (ticketing.envelope.caused_by: the request id of the HTTP
    request or event behind it, and with tracing on the `traceparent` of the span it is written in)."""
    if not conn.is_in_transaction():
        raise RuntimeError("outbox append outside a transaction would publish uncommitted facts")
    if cause := [(name, value.encode()) for name, value in caused_by()]:
        message = message.model_copy(update={"headers": [*message.headers, *cause]})
    await conn.execute(QUERIES.insert_outbox, event_id, message.topic, message.key, message.value,
                       headers_json(message))


def headers_json(message: Outgoing) -> str:
    """The outbox `headers` column: [[name, value], ...] (Kafka header values are UTF-8 here)."""
    return orjson.dumps([[k, v.decode()] for k, v in message.headers]).decode()


async def quarantined(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """Rows Kafka refused for good (ticketing.relay), oldest first, with `held_behind`: the later rows of
    their key that wait for them."""
    return list(await conn.fetch(QUERIES.quarantined))


async def replay(conn: asyncpg.Connection, row_id: int, *, dry_run: bool = False) -> ReplayResult:
    """Put quarantined row `row_id` back in line; a row not in quarantine is left as it is (idempotent)."""
    row = await conn.fetchrow(QUERIES.outbox_row, row_id)
    if row is None:
        return ReplayResult(row_id, "missing")
    if row["quarantined_at"] is None:
        return ReplayResult(row_id, "published" if row["published_at"] else "in line")
    if dry_run:
        return ReplayResult(row_id, "quarantined", row["quarantine_error"])
    replayed = await conn.fetchval(QUERIES.replay, row_id)
    # None: the relay or another operator changed it between the two statements; say what it is now.
    return ReplayResult(row_id, "replayed" if replayed else "in line", row["quarantine_error"])


@dataclass(frozen=True)
class ReplayResult:
    row_id: int
    state: Literal["missing", "published", "in line", "quarantined", "replayed"]
    error: str | None = None
