"""An in-memory schema for the fakes of unit tests: tables of immutable rows, transactions, a clock.

    db = MemoryDb("payments", "outbox", clock=Clock())
    tx = db.begin()          # a snapshot; tx["payments"] is this transaction's own copy of the table
    tx["payments"][pid] = replace(row, status="FAILED")
    tx.commit()              # the rows it changed become visible to later transactions; else dropped

A service's fake unit of work subclasses `MemoryUnitOfWork` and binds its in-memory repositories to the
transaction, so unit tests get what the Postgres unit of work gives: changes visible to later units of
work only after `commit()`, gone when it leaves without.

Rows must be immutable (frozen dataclasses, tuples): a transaction copies tables, not rows, and tells its
own changes by identity. A transaction reads the snapshot taken when it began (REPEATABLE READ rather than
Postgres' READ COMMITTED) and its commit refuses a row another transaction committed meanwhile (first
committer wins): a test that interleaves two units of work on one row fails with `Conflict` instead of
passing on a state Postgres would never reach.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from ticketing.unit_of_work import UnitOfWork

_ABSENT = object()
Table = dict[Hashable, Any]


class Conflict(Exception):
    """Two transactions changed one row; Postgres would have made the second wait and decide again."""


class Clock:
    """The fakes' one clock (Postgres' now(), Redis' TIME, the gateway's): it moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, 12, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)


class MemoryDb:
    def __init__(self, *tables: str, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.tables: dict[str, Table] = {name: {} for name in tables}
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        """A sequence shared by every transaction (an outbox position, say)."""
        return next(self._ids)

    def begin(self) -> MemoryTransaction:
        return MemoryTransaction(self)

    def committed(self, table: str) -> list[Any]:
        """The table's committed rows, in the order they were first committed."""
        return list(self.tables[table].values())


class MemoryTransaction:
    def __init__(self, db: MemoryDb) -> None:
        self.db = db
        self.now = db.clock.now()  # as Postgres' now(): the transaction's start
        self._base = {name: dict(rows) for name, rows in db.tables.items()}
        self._tables = {name: dict(rows) for name, rows in db.tables.items()}
        self.done = False

    def __getitem__(self, table: str) -> Table:
        return self._tables[table]

    def commit(self) -> None:
        if self.done:
            raise RuntimeError("this transaction is over")
        changes: list[tuple[Table, Hashable, Any]] = []
        for name, rows in self._tables.items():
            base, live = self._base[name], self.db.tables[name]
            for key in [*rows, *(k for k in base if k not in rows)]:  # new keys in insertion order
                mine, before = rows.get(key, _ABSENT), base.get(key, _ABSENT)
                if mine is before:
                    continue
                if live.get(key, _ABSENT) is not before:
                    raise Conflict(f"{name} {key!r} was changed by another transaction")
                changes.append((live, key, mine))
        for live, key, mine in changes:
            if mine is _ABSENT:
                live.pop(key, None)
            else:
                live[key] = mine
        self.done = True


class MemoryUnitOfWork(UnitOfWork):
    """A unit of work on a `MemoryDb`; subclasses create their repositories in `bind`."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db
        self.tx: MemoryTransaction | None = None

    @abc.abstractmethod
    def bind(self, tx: MemoryTransaction) -> None:
        """Create the repositories on `tx`."""

    async def __aenter__(self) -> Self:
        self.committed = False
        self.tx = self.db.begin()
        self.bind(self.tx)
        return self

    async def commit(self) -> None:
        assert self.tx is not None, "commit() outside `async with`"
        self.tx.commit()
        self.committed = True

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.tx = None  # uncommitted changes go with it


@dataclass
class MemoryWorld:
    """The base of a unit test's world: the in-memory schema, its clock and its committed outbox."""

    db: MemoryDb

    @property
    def clock(self) -> Clock:
        return self.db.clock

    def outbox(self) -> list[Any]:
        """The committed events, in order (only committed ones are ever relayed)."""
        return self.db.committed("outbox")
