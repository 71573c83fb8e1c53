"""ticketing.db.released_in_background: the caller's answer does not wait for the pool's reset, yet nobody
gets a connection that was not reset (real Postgres)."""

from __future__ import annotations

import asyncio

import pytest
from ticketing.db import create_pool, released_in_background

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
