"""ticketing_testing.in_memory: the transactions the services' fake units of work are built on."""

from __future__ import annotations

import pytest
from ticketing_testing.in_memory import Clock, Conflict, MemoryDb, MemoryTransaction, MemoryUnitOfWork


class Counters(MemoryUnitOfWork):
    def bind(self, tx: MemoryTransaction) -> None:
        self.rows = tx["rows"]


async def test_changes_are_visible_to_later_units_of_work_only_after_commit() -> None:
    db = MemoryDb("rows")
    async with Counters(db) as uow:
        uow.rows["a"] = 1
        async with Counters(db) as other:
            assert "a" not in other.rows
        await uow.commit()
    async with Counters(db) as later:
        assert later.rows == {"a": 1}


async def test_leaving_without_commit_or_by_an_error_discards_everything() -> None:
    db = MemoryDb("rows")
    async with Counters(db) as uow:
        uow.rows["a"] = 1
    with pytest.raises(ZeroDivisionError):
        async with Counters(db) as uow:
            uow.rows["b"] = 1
            _ = 1 / 0
    assert db.committed("rows") == []


def test_a_row_two_transactions_changed_is_refused_to_the_second_committer() -> None:
    db = MemoryDb("rows")
    seed = db.begin()
    seed["rows"].update(a=1, b=1)
    seed.commit()
    first, second = db.begin(), db.begin()
    first["rows"]["a"] = 2
    second["rows"]["a"] = 3
    second["rows"]["b"] = 3
    first.commit()
    with pytest.raises(Conflict):
        second.commit()
    assert db.tables["rows"] == {"a": 2, "b": 1}  # nothing of the refused transaction


def test_deletes_and_new_rows_keep_their_order_and_a_transaction_commits_once() -> None:
    db = MemoryDb("rows")
    tx = db.begin()
    tx["rows"].update(z=1, a=2)
    tx.commit()
    with pytest.raises(RuntimeError):
        tx.commit()
    tx = db.begin()
    del tx["rows"]["z"]
    tx["rows"]["m"] = 3
    tx.commit()
    assert db.committed("rows") == [2, 3]


def test_a_transaction_reads_the_clock_once_when_it_begins() -> None:
    clock = Clock()
    db = MemoryDb("rows", clock=clock)
    start = clock.now()
    tx = db.begin()
    clock.advance(90)
    assert tx.now == start and db.begin().now == clock.now() and (clock.now() - start).total_seconds() == 90
