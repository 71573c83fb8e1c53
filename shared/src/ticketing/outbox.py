"""The outbox writer: events join the business transaction, never a request path to Kafka."""

from __future__ import annotations

import uuid

import asyncpg
import orjson
from pydantic import BaseModel

from ticketing.db import Queries, sql_dir
from ticketing.events import Outgoing, outgoing

QUERIES = Queries.load(sql_dir(__file__) / "outbox.sql")


async def append(conn: asyncpg.Connection, event: BaseModel) -> None:
    """Write `event` to this schema's outbox; must run inside the transaction of the state change."""
    await append_message(conn, event.eventId, outgoing(event))  # type: ignore[attr-defined,arg-type]


async def append_message(conn: asyncpg.Connection, event_id: uuid.UUID, message: Outgoing) -> None:
    if not conn.is_in_transaction():
        raise RuntimeError("outbox append outside a transaction would publish uncommitted facts")
    await conn.execute(QUERIES.insert_outbox, event_id, message.topic, message.key, message.value,
                       headers_json(message))


def headers_json(message: Outgoing) -> str:
    """The outbox `headers` column: [[name, value], ...] (Kafka header values are UTF-8 here)."""
    return orjson.dumps([[k, v.decode()] for k, v in message.headers]).decode()
