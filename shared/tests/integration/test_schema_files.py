"""Each service's functions, triggers and views are what its `sql/schema.sql` says, and only those
(ticketing.migrations applies the file after the migrations): a rule changed in a migration and not in the
file, a function left behind under an old signature, or one created outside the file fails here."""

from __future__ import annotations

import uuid
from pathlib import Path

import asyncpg
import pytest
from ticketing.migrations import SCHEMA_FILE, apply_migrations, package_migrations, shared_migrations

pytestmark = pytest.mark.integration
SERVICES = {"hold_service": "HOLD_DATABASE_URL", "payment_service": "PAYMENT_DATABASE_URL",
            "voucher_service": "VOUCHER_DATABASE_URL", "notifier": "NOTIFIER_DATABASE_URL"}

# Every function, trigger and view of the role's schema, by identity, with its definition as Postgres shows it.
CATALOGUE = """
SELECT 'function ' || p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS definition
FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL
SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text, pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'view ' || c.oid::regclass::text, pg_get_viewdef(c.oid)
FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('v', 'm')
"""
DROP_ALL = """
SELECT 'DROP TRIGGER ' || quote_ident(t.tgname) || ' ON ' || t.tgrelid::regclass::text AS statement
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'DROP VIEW IF EXISTS ' || c.oid::regclass::text || ' CASCADE'
FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'v'
UNION ALL
SELECT 'DROP FUNCTION IF EXISTS ' || p.oid::regprocedure::text || ' CASCADE'
FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
"""


async def catalogue(conn: asyncpg.Connection) -> dict[str, str]:
    return {r["name"]: r["definition"] for r in await conn.fetch(CATALOGUE)}


@pytest.mark.parametrize("package", sorted(SERVICES))
async def test_the_database_has_exactly_what_the_schema_file_makes(package: str, migrated_dsn) -> None:
    folder = package_migrations(package)
    schema = folder.parent / SCHEMA_FILE
    conn = await asyncpg.connect(migrated_dsn(SERVICES[package], folder))
    try:
        live = await catalogue(conn)
        transaction = conn.transaction()  # rolled back: the test database keeps what it had
        await transaction.start()
        try:
            for row in await conn.fetch(DROP_ALL):
                await conn.execute(row["statement"])
            assert await catalogue(conn) == {}
            if schema.is_file():
                await conn.execute(schema.read_text())
            made = await catalogue(conn)
        finally:
            await transaction.rollback()
    finally:
        await conn.close()
    assert sorted(live) == sorted(made), f"{package}: the database and {schema.name} name different objects"
    assert live == made, f"{package}: a definition in the database differs from {schema.name}'s"
    if package == "hold_service":  # the rules of the hold path live in the file, none elsewhere
        assert {"function append_seat_map_events(bigint,jsonb[],jsonb)",
                "trigger booking_customer_cap_at_commit on booking"} <= set(made)


async def test_a_schema_file_is_applied_again_when_it_changes_or_a_migration_ran(tmp_path: Path,
                                                                                  migrated_dsn) -> None:
    package = tmp_path / f"probe_{uuid.uuid4().hex[:8]}"
    (package / "sql" / "migrations").mkdir(parents=True)
    schema = package / "sql" / SCHEMA_FILE
    function = f"schema_probe_{uuid.uuid4().hex[:8]}"
    dsn = migrated_dsn("PLATFORM_TEST_DATABASE_URL", None)
    conn = await asyncpg.connect(dsn)

    async def version() -> tuple[int, object]:
        applied = await conn.fetchval("SELECT applied_at FROM schema_file WHERE name = $1", package.name)
        return await conn.fetchval(f"SELECT {function}()"), applied

    try:
        for answer in (1, 2):
            schema.write_text(f"CREATE OR REPLACE FUNCTION {function}() RETURNS INT LANGUAGE sql RETURN {answer};\n")
            apply_migrations(dsn, shared_migrations(), package / "sql" / "migrations")
            assert (await version())[0] == answer  # applied, then applied again once changed
        before = await version()
        apply_migrations(dsn, shared_migrations(), package / "sql" / "migrations")
        assert await version() == before  # unchanged, nothing new to migrate: left alone
        (package / "sql" / "migrations" / f"0001_{package.name}.sql").write_text(f"DROP FUNCTION {function}();\n")
        apply_migrations(dsn, shared_migrations(), package / "sql" / "migrations")
        assert (await version())[0] == 2  # a migration ran (here it dropped the function): the file again
    finally:
        await conn.execute(f"DROP FUNCTION IF EXISTS {function}()")
        await conn.execute("DELETE FROM schema_file WHERE name = $1", package.name)
        await conn.execute("DELETE FROM _yoyo_migration WHERE migration_id = $1", f"0001_{package.name}")
        await conn.close()
