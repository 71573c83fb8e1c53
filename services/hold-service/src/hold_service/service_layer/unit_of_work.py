"""The unit of work: one connection, one transaction; leaving without commit() rolls back."""

from __future__ import annotations

from types import TracebackType

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from asyncpg.transaction import Transaction

from hold_service.adapters.repository import Conn, HoldRepository, IdempotencyRepository

# sql/holds.sql lock_customer_showtime with its two bigints inlined: the same lock key.
LOCK_CUSTOMER_SHOWTIME = "SELECT pg_advisory_xact_lock(hashtextextended('%d:%d', 7))"


class UnitOfWork:
    holds: HoldRepository
    keys: IdempotencyRepository
    customer_locked: tuple[int, int] | None = None  # (customer, showtime) whose lock BEGIN took

    def __init__(self, pool: asyncpg.Pool, lock_customer: tuple[int, int] | None = None) -> None:
        self.pool = pool
        self._lock_customer = lock_customer
        self._conn: PoolConnectionProxy | None = None
        self._tx: Transaction | None = None
        self._manual = False  # BEGIN sent by us (with the lock), not by an asyncpg Transaction
        self.committed = False

    async def __aenter__(self) -> UnitOfWork:
        conn: PoolConnectionProxy = await self.pool.acquire()
        self._conn = conn
        self.holds, self.keys = HoldRepository(conn), IdempotencyRepository(conn)
        self.committed = False
        try:
            await self._begin(conn)
        except BaseException:
            await self.pool.release(conn)  # rolls back whatever BEGIN left open
            self._conn = None
            raise
        return self

    async def _begin(self, conn: PoolConnectionProxy) -> None:
        if self._lock_customer is None:
            self._tx = conn.transaction()
            await self._tx.start()
            return
        # BEGIN and the per-customer advisory lock in one round trip (simple-query protocol: two
        # statements in one message, no parameters, hence the ints are formatted in). They stay two
        # statements, so take_seats' READ COMMITTED snapshot is still taken after the lock is granted.
        customer, showtime = (int(v) for v in self._lock_customer)
        self._manual = True
        await conn.execute(f"BEGIN; {LOCK_CUSTOMER_SHOWTIME % (customer, showtime)}")
        self.customer_locked = (customer, showtime)

    async def commit(self) -> None:
        assert self._conn is not None
        if self._manual:
            await self._conn.execute("COMMIT")
        else:
            assert self._tx is not None
            await self._tx.commit()
        self.committed = True

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if not self.committed and self._conn is not None:
                if self._manual:
                    await self._conn.execute("ROLLBACK")
                elif self._tx is not None:
                    await self._tx.rollback()
        finally:
            if self._conn is not None:
                await self.pool.release(self._conn)  # asyncpg rolls back a transaction left open
            self._conn, self._tx, self._manual, self.customer_locked = None, None, False, None


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
