"""The unit of work: one transaction, its repositories, and the outbox it publishes through."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from pydantic import BaseModel
from ticketing import outbox

from payment_service.adapters.repository import (
    CallbackEventRepository,
    Conn,
    IdempotencyRepository,
    PaymentRepository,
)


class Transaction:
    """Repositories bound to one open transaction; leaving without an exception commits."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.payments = PaymentRepository(conn)
        self.keys = IdempotencyRepository(conn)
        self.callbacks = CallbackEventRepository(conn)

    async def publish(self, event: BaseModel) -> None:
        await outbox.append(self.conn, event)  # type: ignore[arg-type]  # a pool proxy is a Connection


class UnitOfWork:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[Transaction]:
        async with self.pool.acquire() as conn, conn.transaction():
            yield Transaction(conn)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Transaction]:
        """Autocommit reads (no transaction held across the network calls that follow)."""
        async with self.pool.acquire() as conn:
            yield Transaction(conn)


def joined(conn: asyncpg.Connection) -> Transaction:
    """A Transaction on a connection whose transaction someone else owns (the idempotent consumer)."""
    return Transaction(conn)
