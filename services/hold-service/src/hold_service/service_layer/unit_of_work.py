"""The unit of work: one connection, one transaction; leaving without commit() rolls back."""

from __future__ import annotations

from types import TracebackType

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from asyncpg.transaction import Transaction

from hold_service.adapters.repository import Conn, HoldRepository, IdempotencyRepository


class UnitOfWork:
    holds: HoldRepository
    keys: IdempotencyRepository

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self._conn: PoolConnectionProxy | None = None
        self._tx: Transaction | None = None
        self.committed = False

    async def __aenter__(self) -> UnitOfWork:
        conn: PoolConnectionProxy = await self.pool.acquire()
        self._conn = conn
        self._tx = conn.transaction()
        await self._tx.start()
        self.holds, self.keys = HoldRepository(conn), IdempotencyRepository(conn)
        self.committed = False
        return self

    async def commit(self) -> None:
        assert self._tx is not None
        await self._tx.commit()
        self.committed = True

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if not self.committed and self._tx is not None:
                await self._tx.rollback()
        finally:
            if self._conn is not None:
                await self.pool.release(self._conn)
            self._conn, self._tx = None, None


class ConnectionUnitOfWork(UnitOfWork):
    """A unit of work inside a transaction someone else owns (the idempotent consumer's)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.committed = False

    async def __aenter__(self) -> ConnectionUnitOfWork:
        self.holds, self.keys = HoldRepository(self.conn), IdempotencyRepository(self.conn)
        return self

    async def commit(self) -> None:
        self.committed = True  # the owner commits

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None
