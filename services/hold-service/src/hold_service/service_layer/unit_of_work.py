"""The unit of work: one connection, one transaction; leaving without commit() rolls back."""

from __future__ import annotations

from collections.abc import Awaitable
from types import TracebackType

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from asyncpg.transaction import Transaction

from hold_service.adapters.repository import Conn, HoldRepository, IdempotencyRepository, cap_refusal


class UnitOfWork:
    """`transaction=False`: no BEGIN/COMMIT round trips, for work that is one statement (its own
    transaction); commit() then only records that the work is done."""

    holds: HoldRepository
    keys: IdempotencyRepository

    def __init__(self, pool: asyncpg.Pool, transaction: bool = True) -> None:
        self.pool = pool
        self._transaction = transaction
        self._conn: PoolConnectionProxy | None = None
        self._tx: Transaction | None = None
        self.committed = False

    async def __aenter__(self) -> UnitOfWork:
        conn: PoolConnectionProxy = await self.pool.acquire()
        self._conn = conn
        self.holds, self.keys = HoldRepository(conn), IdempotencyRepository(conn)
        self.committed = False
        try:
            if self._transaction:
                await self._begin(conn)
        except BaseException:
            await self.pool.release(conn)  # rolls back whatever BEGIN left open
            self._conn = None
            raise
        return self

    async def _begin(self, conn: PoolConnectionProxy) -> None:
        # asyncpg's own Transaction, never a hand-sent BEGIN: the pool then knows the connection's state
        # and resets or discards it on release, even after a failure or a cancelled query.
        self._tx = conn.transaction()
        await self._tx.start()

    async def commit(self) -> None:
        if self._tx is not None:
            try:
                await self._tx.commit()  # deferred checks run here (migrations 0002, 0003)
            except asyncpg.PostgresError as exc:
                if (refused := cap_refusal(exc)) is not None:
                    raise refused from exc
                raise
        self.committed = True

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        conn, tx = self._conn, self._tx
        self._conn, self._tx = None, None
        if conn is None:
            return
        failing = exc is not None
        # On a dead connection the rollback and the pool's reset fail too (asyncpg then terminates the
        # connection). When the unit of work is already failing, its original error (say
        # ConnectionDoesNotExistError, a 503) is the one to report, not these.
        try:
            if not self.committed and tx is not None:
                await _quietly(tx.rollback(), failing)
        finally:
            await _quietly(self.pool.release(conn), failing)


async def _quietly(step: Awaitable[object], failing: bool) -> None:
    try:
        await step
    except Exception:
        if not failing:
            raise


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
