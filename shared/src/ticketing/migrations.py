"""Schema migrations (yoyo-migrations, plain SQL): the shared tables first, then the service's own."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def apply_migrations(dsn: str, *folders: Path) -> None:
    """yoyo-migrations, the same tool `make migrate` runs; yoyo's lock serialises concurrent runs."""
    from yoyo import get_backend, read_migrations

    backend = get_backend(dsn.replace("postgresql://", "postgresql+psycopg://", 1))
    migrations = read_migrations(*(str(f) for f in folders))
    with backend.lock():
        backend.apply_migrations(backend.to_apply(migrations))


def shared_migrations() -> Path:
    return Path(__file__).resolve().parent / "sql" / "migrations"


def package_migrations(package: str) -> Path:
    """`<package>/sql/migrations` of an installed service package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no installed package {package}")
    return Path(next(iter(spec.submodule_search_locations))) / "sql" / "migrations"
