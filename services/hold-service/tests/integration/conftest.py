"""Fixtures: the real app in-process (lifespan managed) against the migrated test database and Redis."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from hold_service.bootstrap import Service
from hold_service.config import HoldSettings
from hold_service.entrypoints.api.app import get_application
from ticketing.auth import issue_token
from ticketing.pytest_plugin import env

MIGRATIONS = Path(__file__).resolve().parents[2] / "src" / "hold_service" / "sql" / "migrations"
SECRET = env("JWT_SECRET", "dev-only-change-me")


def new_id() -> int:
    return random.randint(10**9, 2**52)


def auth(sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def hold_dsn(migrated_dsn: Callable[[str, Path | None], str]) -> str:
    return migrated_dsn("HOLD_DATABASE_URL", MIGRATIONS)


class Running:
    def __init__(self, client: httpx.AsyncClient, service: Service) -> None:
        self.client, self.service = client, service
        self.deps, self.redis = service.deps, service.redis

    async def showtime(self, rows: dict[str, int] | None = None, price: int = 1200) -> int:
        sid = new_id()
        r = await self.client.post("/admin/showtimes", headers=auth(1, "admin"), json={
            "showtimeId": sid, "title": "Test", "startsAt": "2030-01-01T20:00:00Z", "priceCents": price,
            "rows": rows or {"F": 10}})
        assert r.status_code == 201, r.text
        return sid

    async def hold(self, sid: int, seats: list[str], customer: int | None = None,
                   **headers: str) -> httpx.Response:
        return await self.client.post(f"/showtimes/{sid}/holds", json={"seats": seats},
                                      headers={**auth(customer or new_id()), **headers})


@pytest_asyncio.fixture
async def start(hold_dsn: str, redis_url: str) -> AsyncIterator[Callable[..., Any]]:
    """`async with start(hold_ttl_seconds=2) as svc:` runs the app with those settings."""
    @asynccontextmanager
    async def run(**overrides: Any) -> AsyncIterator[Running]:
        settings = HoldSettings(database_url=hold_dsn, redis_url=overrides.pop("redis_url", redis_url),
                                jwt_secret=SECRET, db_pool_max=20, **overrides)
        app = get_application(settings)
        logging.getLogger("httpx").setLevel(logging.WARNING)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://hold", timeout=30) as client:
                yield Running(client, app.state.service)
    yield run


@pytest_asyncio.fixture
async def db(hold_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(hold_dsn)
    yield conn
    await conn.close()


async def seat_rows(db: asyncpg.Connection, sid: int) -> dict[str, asyncpg.Record]:
    rows = await db.fetch("SELECT * FROM show_seat WHERE showtime_id = $1", sid)
    return {r["seat_code"]: r for r in rows}


async def assert_single_holders(db: asyncpg.Connection, sid: int) -> None:
    """The invariant, from Postgres: every HELD/BOOKED seat is owned by exactly one live booking row."""
    bad = await db.fetch("""
        SELECT s.seat_code, count(b.hold_id) AS owners
        FROM show_seat s
        LEFT JOIN booking b ON b.showtime_id = s.showtime_id AND s.seat_code = ANY(b.seats)
             AND b.status IN ('HELD', 'BOOKED') AND (b.status = 'BOOKED' OR b.expires_at >= now())
        WHERE s.showtime_id = $1 AND s.status IN ('HELD', 'BOOKED')
          AND (s.status = 'BOOKED' OR s.hold_expires_at >= now())
        GROUP BY s.seat_code HAVING count(b.hold_id) <> 1""", sid)
    assert not bad, [dict(r) for r in bad]
    mismatch = await db.fetch("""
        SELECT s.seat_code FROM show_seat s JOIN booking b ON b.hold_id = s.hold_id
        WHERE s.showtime_id = $1 AND NOT (s.seat_code = ANY(b.seats))""", sid)
    assert not mismatch


@pytest.fixture
def h() -> Any:
    """The helpers above (test modules cannot import conftest under --import-mode=importlib)."""
    from types import SimpleNamespace

    return SimpleNamespace(new_id=new_id, auth=auth, seat_rows=seat_rows,
                           assert_single_holders=assert_single_holders)
