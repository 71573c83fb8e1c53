"""Unit of work: owns one transaction; leaving without commit() rolls back."""

from __future__ import annotations

import abc
from types import TracebackType

import asyncpg

from voucher_service.adapters.repository import VoucherRepository


class UnitOfWork(abc.ABC):
    vouchers: VoucherRepository

    @abc.abstractmethod
    async def __aenter__(self) -> UnitOfWork: ...

    @abc.abstractmethod
    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    @abc.abstractmethod
    async def commit(self) -> None: ...


class PgUnitOfWork(UnitOfWork):
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def __aenter__(self) -> PgUnitOfWork:
        self._conn = await self.pool.acquire()
        self._tx = self._conn.transaction()
        await self._tx.start()
        self._done = False
        self.vouchers = VoucherRepository(self._conn)  # type: ignore[arg-type]
        return self

    async def commit(self) -> None:
        await self._tx.commit()
        self._done = True

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if not self._done:
                await self._tx.rollback()
        finally:
            await self.pool.release(self._conn)


class JoinedUnitOfWork(UnitOfWork):
    """Joins a transaction someone else owns (the idempotent consumer's, which also writes the inbox
    row): commit() is a no-op, the owner commits or rolls back."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.vouchers = VoucherRepository(conn)

    async def __aenter__(self) -> JoinedUnitOfWork:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    async def commit(self) -> None:
        return None
