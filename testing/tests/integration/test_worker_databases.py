"""The databases of `pytest -n`: each worker runs on its own copy of the migrated test database."""

from __future__ import annotations

import subprocess
import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from ticketing_testing import BASE_TEST_DATABASE, env
from ticketing_testing.workers import WORKER, copy_databases, worker_database

pytestmark = pytest.mark.integration


def on(database: str, variable: str) -> str:
    return urlunsplit(urlsplit(env(variable))._replace(path=f"/{database}"))


async def test_the_tests_run_on_their_workers_database(migrated_dsn) -> None:
    conn = await asyncpg.connect(migrated_dsn("PLATFORM_TEST_DATABASE_URL", None))
    try:
        assert await conn.fetchval("SELECT current_database()") == worker_database(BASE_TEST_DATABASE, WORKER)
    finally:
        await conn.close()


async def test_a_copy_has_the_templates_tables_and_rows_and_every_role_its_schema(migrated_dsn) -> None:
    migrated_dsn("PLATFORM_TEST_DATABASE_URL", None)  # PostgreSQL is there (or the test fails under CI)
    template = f"{BASE_TEST_DATABASE}_template_{uuid.uuid4().hex[:8]}"
    copy = f"{template}_copy"
    try:
        copy_databases("template1", [template])  # an empty database, provisioned
        conn = await asyncpg.connect(on(template, "PLATFORM_TEST_DATABASE_URL"))
        await conn.execute("CREATE TABLE marker (v INT); INSERT INTO marker VALUES (42)")
        await conn.close()
        copy_databases(template, [copy])
        conn = await asyncpg.connect(on(copy, "PLATFORM_TEST_DATABASE_URL"))
        try:
            assert await conn.fetchval("SELECT v FROM marker") == 42
            assert await conn.fetchval("SELECT current_schema()") == "platform_test"
        finally:
            await conn.close()
        conn = await asyncpg.connect(on(copy, "HOLD_DATABASE_URL"))
        try:
            assert await conn.fetchval("SELECT current_schema()") == "hold"  # the role's own, as provisioned
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.fetchval("SELECT v FROM platform_test.marker")
        finally:
            await conn.close()
    finally:
        for name in (copy, template):
            subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-X", "-q", "-d", "postgres", "-c",
                            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'], check=True, capture_output=True)
