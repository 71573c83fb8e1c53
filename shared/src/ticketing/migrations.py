"""Schema migrations (yoyo-migrations, plain SQL): the shared tables first, then the service's own, then the
service's functions and triggers as its `sql/schema.sql` states them now.

Migrations change tables, once each, in order. A rule written in SQL (a function, a trigger) is kept in one
file per service instead, so that a reader finds its current text in one place, not as the last of several
`CREATE OR REPLACE` migrations: `sql/schema.sql`, beside `sql/migrations`, applied after them whenever a
migration ran or the file changed since it was last applied (its digest is kept in `schema_file`). Every
way in runs this: `make migrate` (deploy/local/migrate.sh), `ticketing migrate`, the chart's and compose's
migrate jobs (`ticketing-run <service> migrate`), and the tests' databases.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

SCHEMA_FILE = "schema.sql"


def apply_migrations(dsn: str, *folders: Path) -> None:
    """yoyo's migrations of `folders` not applied yet, then each folder's schema file (its parent's
    schema.sql, if any); yoyo's lock serialises concurrent runs."""
    from yoyo import get_backend, read_migrations

    backend = get_backend(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    migrations = read_migrations(*(str(f) for f in folders))
    with backend.lock():
        pending = backend.to_apply(migrations)
        backend.apply_migrations(pending)
        for schema in schema_files(*folders):
            apply_schema(backend, schema, always=bool(pending))


def schema_files(*folders: Path) -> list[Path]:
    return [f.parent / SCHEMA_FILE for f in folders if (f.parent / SCHEMA_FILE).is_file()]


def apply_schema(backend: Any, schema: Path, *, always: bool) -> bool:
    """Run `schema` in one transaction unless the database has this very text already (and `always` is
    false: a migration that ran may have dropped what the file makes); whether it ran."""
    text = schema.read_text()
    digest, name = hashlib.sha256(text.encode()).hexdigest(), schema.parent.parent.name
    with backend.transaction():
        cursor = backend.connection.cursor()
        cursor.execute("SELECT sha256 FROM schema_file WHERE name = %s", (name,))
        if not always and (row := cursor.fetchone()) is not None and row[0] == digest:
            return False
        cursor.execute(text.encode())  # several statements, no parameters: sent as they are
        cursor.execute("INSERT INTO schema_file (name, sha256) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE "
                       "SET sha256 = excluded.sha256, applied_at = now()", (name, digest))
    return True


def shared_migrations() -> Path:
    return Path(__file__).resolve().parent / "sql" / "migrations"


def package_migrations(package: str) -> Path:
    """`<package>/sql/migrations` of an installed service package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no installed package {package}")
    return Path(next(iter(spec.submodule_search_locations))) / "sql" / "migrations"
