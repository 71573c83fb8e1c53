"""The unit of work every service uses: one connection, one transaction, explicit commit.

    async with deps.uow() as uow:       # BEGIN
        ...uow.<repositories>...
        await uow.commit()              # leaving without it rolls back

`PostgresUnitOfWork(pool, transaction=False)` opens none: each statement commits on its own, for a step that is
one statement (BEGIN and COMMIT would be two more round trips, one of them a WAL flush), and its connection goes
back to the pool in the background (ticketing.db.released_in_background); `commit()` then only records that the
work is done.

A unit of work can also join a transaction that someone else owns (`uow.joined(conn)`): the idempotent
consumer opens the transaction, writes its inbox row and commits after the handler, so the handler's
effect and the inbox row are one fact. There `commit()` only records that the work is done.

Services subclass `PostgresUnitOfWork` and bind their repositories in `bind()`; unit tests subclass
`UnitOfWork` with in-memory repositories.

A transaction whose BEGIN fails because the connection is gone (a pooled connection the server dropped in a
restart or a failover, before the pool noticed) is begun again on another connection: nothing had been sent,
so that is always safe. A failure after BEGIN is the caller's (the API answers 503).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Self

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from asyncpg.transaction import Transaction

from ticketing.db import released_in_background
from ticketing.transient import CONNECTION_LOST

Conn = asyncpg.Connection | PoolConnectionProxy  # a plain connection or the pool's proxy for one
BEGIN_RETRY_DELAYS = (0.0, 0.2)  # a BEGIN on a lost connection: tried again at once, then once more after 0.2 s


class UnitOfWork(abc.ABC):
    committed: bool = False

    @abc.abstractmethod
    async def __aenter__(self) -> Self: ...

    @abc.abstractmethod
    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    @abc.abstractmethod
    async def commit(self) -> None: ...

    def joined(self, conn: Conn) -> Self:
        """The same kind of unit of work inside a transaction someone else owns (a consumer's, beside its
        inbox row): a consumer takes it from its service's `deps.uow()` (bootstrap.py builds that)."""
        raise NotImplementedError(f"{type(self).__name__} cannot join a transaction")


class PostgresUnitOfWork(UnitOfWork):
    """`PostgresUnitOfWork(pool)` owns a transaction; `.joined(conn)` works inside the caller's;
    `PostgresUnitOfWork(pool, transaction=False)` runs each statement in its own."""

    def __init__(self, pool: asyncpg.Pool | None = None, *, conn: Conn | None = None,
                 transaction: bool = True, on_commit: Callable[[], None] | None = None) -> None:
        """Exactly one of `pool` (own the transaction) and `conn` (join the caller's). `on_commit` is called after
        each commit of its own (a joined unit of work's transaction is committed by its owner, later)."""
        if (pool is None) == (conn is None):
            raise ValueError("a unit of work takes a pool or a connection")
        self.pool = pool
        self._conn: Conn | None = conn
        self._tx: Transaction | None = None
        self._joined = conn is not None
        self._transaction = transaction
        self._on_commit = on_commit
        self._statements: AbstractAsyncContextManager[PoolConnectionProxy] | None = None
        if conn is not None:
            self.bind(conn)

    @abc.abstractmethod
    def bind(self, conn: Conn) -> None:
        """Create the repositories on `conn`."""

    def joined(self, conn: Conn) -> Self:
        return type(self)(conn=conn)

    async def __aenter__(self) -> Self:
        self.committed = False
        if self._joined:
            return self
        assert self.pool is not None
        if not self._transaction:
            self._statements = released_in_background(self.pool)
            self._conn = await self._statements.__aenter__()
            self.bind(self._conn)
            return self
        for delay in (*BEGIN_RETRY_DELAYS, None):
            try:
                conn = await self._begin(self.pool)
                break
            except CONNECTION_LOST:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
        self.bind(conn)
        return self

    async def _begin(self, pool: asyncpg.Pool) -> PoolConnectionProxy:
        conn: PoolConnectionProxy = await pool.acquire()
        self._conn = conn
        try:
            # asyncpg's own Transaction, never a hand-sent BEGIN: the pool then knows the connection's
            # state and resets or discards it on release, even after a failure or a cancelled query.
            self._tx = conn.transaction()
            await self._tx.start()
        except BaseException:
            self._conn, self._tx = None, None
            await _quietly(lambda: pool.release(conn), failing=True)  # rolls back BEGIN, or drops a dead connection
            raise
        return conn

    async def commit(self) -> None:
        if self._tx is not None:
            await self._tx.commit()  # deferred constraint triggers run here
        self.committed = True
        if self._on_commit is not None and not self._joined:
            self._on_commit()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._joined:
            return
        if self._statements is not None:
            statements, self._statements, self._conn = self._statements, None, None
            await statements.__aexit__(exc_type, exc, tb)
            return
        conn, tx, pool = self._conn, self._tx, self.pool
        self._conn, self._tx = None, None
        if conn is None or pool is None:
            return
        failing = exc is not None
        # On a dead connection the rollback and the pool's reset fail too (asyncpg then terminates the
        # connection). When the unit of work is already failing, its original error (say
        # ConnectionDoesNotExistError, a 503) is the one to report, not these.
        try:
            if not self.committed and tx is not None:
                await _quietly(tx.rollback, failing)
        finally:
            await _quietly(lambda: pool.release(conn), failing)  # type: ignore[arg-type]  # the pool's own proxy


async def _quietly(step: Callable[[], Awaitable[object]], failing: bool) -> None:
    """asyncpg checks a closed connection when the step is called, not awaited: both are inside the try."""
    try:
        await step()
    except Exception:
        if not failing:
            raise
