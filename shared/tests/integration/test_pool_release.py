"""ticketing.db.released_in_background: the caller's answer does not wait for the pool's reset, yet nobody
gets a connection that was not reset (real Postgres); a unit of work without a transaction is built on it."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from ticketing.db import create_pool, released_in_background
from ticketing.unit_of_work import Conn, PostgresUnitOfWork

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool(platform_dsn):
    p = await create_pool(platform_dsn, min_size=1, max_size=1)
    yield p
    await p.close()


async def test_the_block_ends_before_the_connection_is_back_and_it_is_back_a_moment_later(pool) -> None:
    async with released_in_background(pool) as conn:
        assert await conn.fetchval("SELECT 1") == 1
    assert pool.get_idle_size() == 0  # the release (its reset round trip) is under way, not awaited
    async with asyncio.timeout(5):
        while pool.get_idle_size() == 0:
            await asyncio.sleep(0.01)


async def test_what_a_block_leaves_on_its_connection_is_reset_before_the_next_user_gets_it(pool) -> None:
    async with released_in_background(pool) as conn:
        pid = await conn.fetchval("SELECT pg_backend_pid()")
        await conn.execute("SET application_name = 'left-behind'")
        await conn.execute("LISTEN left_behind")
        await conn.execute("BEGIN")  # a unit of work that never finished
        await conn.execute("SELECT pg_advisory_lock(4242)")
    async with pool.acquire() as conn:  # max_size=1: the same connection, once its release is done
        assert await conn.fetchval("SELECT pg_backend_pid()") == pid
        assert await conn.fetchval("SELECT current_setting('application_name')") != "left-behind"
        assert await conn.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1",
                                   pid) == 0


async def test_an_error_in_the_block_still_hands_the_connection_back(pool) -> None:
    with pytest.raises(ZeroDivisionError):
        async with released_in_background(pool) as conn:
            await conn.execute("BEGIN")
            raise ZeroDivisionError
    async with asyncio.timeout(5), pool.acquire() as conn:
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT 1") == 1


class Scratch(PostgresUnitOfWork):
    """A unit of work with one repository: the connection itself."""

    def bind(self, conn: Conn) -> None:
        self.conn = conn


async def test_a_unit_of_work_without_a_transaction_commits_each_statement_alone(pool, platform_dsn) -> None:
    name = f"uow_{uuid.uuid4().hex[:12]}"
    other = await asyncpg.connect(platform_dsn)
    try:
        async with Scratch(pool, transaction=False) as uow:
            assert not uow.conn.is_in_transaction()  # no BEGIN was sent
            await uow.conn.execute(f"CREATE TABLE {name} (n int)")
            await uow.conn.execute(f"INSERT INTO {name} VALUES (1)")
            assert await other.fetchval(f"SELECT count(*) FROM {name}") == 1  # committed already
        async with Scratch(pool, transaction=False) as uow:
            await uow.conn.execute(f"INSERT INTO {name} VALUES (2)")
            await uow.commit()  # nothing left to commit
        with pytest.raises(ZeroDivisionError):
            async with Scratch(pool, transaction=False) as uow:
                await uow.conn.execute(f"INSERT INTO {name} VALUES (3)")
                raise ZeroDivisionError  # no rollback takes back what each statement committed
        assert await other.fetchval(f"SELECT count(*) FROM {name}") == 3
        async with asyncio.timeout(5), pool.acquire() as conn:  # back in the pool, reset
            assert not conn.is_in_transaction()
    finally:
        await other.execute(f"DROP TABLE IF EXISTS {name}")
        await other.close()


async def test_a_unit_of_work_with_a_transaction_still_commits_only_on_commit(pool, platform_dsn) -> None:
    name = f"uow_{uuid.uuid4().hex[:12]}"
    other = await asyncpg.connect(platform_dsn)
    await other.execute(f"CREATE TABLE {name} (n int)")
    try:
        async with Scratch(pool) as uow:
            assert uow.conn.is_in_transaction()
            await uow.conn.execute(f"INSERT INTO {name} VALUES (1)")
            assert await other.fetchval(f"SELECT count(*) FROM {name}") == 0
        assert await other.fetchval(f"SELECT count(*) FROM {name}") == 0  # left without commit: rolled back
    finally:
        await other.execute(f"DROP TABLE IF EXISTS {name}")
        await other.close()


async def test_on_commit_is_called_after_its_own_commit_only(pool, platform_dsn) -> None:
    """What hold-service's seat-map numberer is woken by: the work is committed when it is told, and a joined unit
    of work, whose owner commits later, tells nothing."""
    name = f"uow_{uuid.uuid4().hex[:12]}"
    other = await asyncpg.connect(platform_dsn)
    await other.execute(f"CREATE TABLE {name} (n int)")
    seen: list[int] = []

    def told() -> None:
        seen.append(1)

    try:
        async with Scratch(pool, on_commit=lambda: seen.append(len(seen))) as uow:
            await uow.conn.execute(f"INSERT INTO {name} VALUES (1)")
            assert seen == []
            await uow.commit()
        assert seen == [0]
        async with Scratch(pool, on_commit=told) as uow:
            await uow.conn.execute(f"INSERT INTO {name} VALUES (2)")  # left without commit: nothing told
        assert seen == [0]
        async with pool.acquire() as conn, conn.transaction():
            joined = Scratch(conn=conn, on_commit=told)
            async with joined:
                await joined.commit()
        assert seen == [0]
        assert await other.fetchval(f"SELECT count(*) FROM {name}") == 1
    finally:
        await other.execute(f"DROP TABLE IF EXISTS {name}")
        await other.close()
