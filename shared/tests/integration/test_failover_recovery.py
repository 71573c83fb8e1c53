"""What a PostgreSQL failover does to a service, each recovery path on the real test database: a pooled
connection cut under the pool (as the balancer cuts the old primary's), a write that reaches a standby, the relay
leader's connection lost with its advisory lock. Cluster mode's fault run (R20) shows them all under load."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from platform_support import read_topic, write_events
from ticketing.api.errors import install_error_handlers
from ticketing.db import create_pool
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing.unit_of_work import Conn, PostgresUnitOfWork
from ticketing_testing.cutting_proxy import CuttingProxy

pytestmark = pytest.mark.integration


class Scratch(PostgresUnitOfWork):
    def bind(self, conn: Conn) -> None:
        self.conn = conn


async def test_a_unit_of_work_whose_pooled_connection_was_cut_begins_again_on_a_new_one(platform_dsn) -> None:
    async with CuttingProxy(platform_dsn) as proxy:
        pool = await create_pool(proxy.dsn, min_size=1, max_size=1)
        try:
            async with Scratch(pool) as uow:
                before = await uow.conn.fetchval("SELECT pg_backend_pid()")
                await uow.commit()
            proxy.cut()  # the pool has not seen it yet: its one connection is dead and still idle in it
            async with Scratch(pool) as uow:
                after = await uow.conn.fetchval("SELECT pg_backend_pid()")
                await uow.commit()
            assert after != before
        finally:
            await pool.close()


async def test_a_cut_after_begin_is_the_callers_and_the_pool_drops_the_dead_connection(platform_dsn) -> None:
    async with CuttingProxy(platform_dsn) as proxy:
        pool = await create_pool(proxy.dsn, min_size=1, max_size=1)
        try:
            with pytest.raises((asyncpg.ConnectionDoesNotExistError, ConnectionError)):
                async with Scratch(pool) as uow:
                    await uow.conn.fetchval("SELECT 1")
                    proxy.cut()
                    await uow.conn.fetchval("SELECT 2")  # not retried: the transaction may have done something
            async with Scratch(pool) as uow:
                assert await uow.conn.fetchval("SELECT 3") == 3
        finally:
            await pool.close()


async def test_a_write_that_reaches_a_standby_answers_503_not_500(platform_dsn) -> None:
    # A standby refuses writes with 25006 (read-only transaction); so does a session forced read-only.
    pool = await create_pool(platform_dsn, min_size=1, max_size=1,
                             server_settings={"default_transaction_read_only": "on"})
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/write")
    async def write() -> dict[str, str]:
        async with Scratch(pool) as uow:
            await uow.conn.execute("CREATE TABLE written_on_a_standby (n int)")
            await uow.commit()
        return {}

    try:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)  # the answer, as a client sees it
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            r = await client.post("/write")
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "UNAVAILABLE"
    finally:
        await pool.close()


async def test_the_relays_elect_a_new_leader_when_the_leaders_connection_is_lost(
        db, topic, platform_dsn, kafka_bootstrap) -> None:
    relays = [OutboxRelay(RelayConfig(service="platform-test", dsn=platform_dsn, bootstrap=kafka_bootstrap,
                                      poll_interval=0.2)) for _ in range(2)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stop)) for r in relays]
    lock_holder = """SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                     AND objid = hashtext('platform_test.outbox-relay')::oid
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"""
    try:
        first = await read_topic(kafka_bootstrap, topic, set(await write_events(db, topic, ["a"], per_key=3)))
        assert first
        leader = await db.fetchval(lock_holder)
        await db.execute("SELECT pg_terminate_backend($1)", leader)  # its session, and so its lock, are gone
        more = await write_events(db, topic, ["b"], per_key=3)
        records = await read_topic(kafka_bootstrap, topic, set(more), timeout=30)
        assert set(more) <= {r[3] for r in records}
        assert await db.fetchval(lock_holder) not in (None, leader)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
