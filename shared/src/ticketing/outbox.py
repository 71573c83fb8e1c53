"""The outbox writer: events join the business transaction, never a request path to Kafka."""

from __future__ import annotations

import asyncpg
from pydantic import BaseModel

from ticketing.db import Queries, sql_dir
from ticketing.events import outgoing

QUERIES = Queries.load(sql_dir(__file__) / "outbox.sql")


async def append(conn: asyncpg.Connection, event: BaseModel) -> None:
    """Write `event` to this schema's outbox; must run inside the transaction of the state change."""
    if not conn.is_in_transaction():
        raise RuntimeError("outbox.append outside a transaction would publish uncommitted facts")
    message = outgoing(event)  # type: ignore[arg-type]
    headers = [[k, v.decode()] for k, v in message.headers]
    await conn.execute(QUERIES.insert_outbox, event.eventId, message.topic,  # type: ignore[attr-defined]
                       message.key, message.value, headers)
