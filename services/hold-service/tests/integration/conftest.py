"""Fixtures: the real app in-process (lifespan managed) against the migrated test database and Redis, and
`open_ports`, every port of service_layer/ports.py as a fake or as the real adapter (the contract tests)."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from hold_service.adapters import repository
from hold_service.adapters.admission import RateLimits, RedisAdmission
from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.repository import PgHoldsUnitOfWork
from hold_service.adapters.room_store import PgRoomStore
from hold_service.adapters.seat_gate import SeatGate
from hold_service.adapters.seat_map_feed import PgSeatMapFeed
from hold_service.adapters.seat_map_source import PgSeatMapSource
from hold_service.adapters.seat_map_versions import SeatMapNumberer
from hold_service.adapters.seat_maps import LiveSeatMaps
from hold_service.adapters.writer import PostgresHoldWriter
from hold_service.bootstrap import Service
from hold_service.config import HoldSettings
from hold_service.domain.commands import ConfirmBooking
from hold_service.domain.hall import Prices, ShowtimeDetails, layout_hall, rows_hall
from hold_service.domain.model import Hold, TakeSeats, Verdict
from hold_service.entrypoints.api.app import get_application
from hold_service.service_layer.lifecycle import confirm_booking
from hold_service.service_layer.ports import Admission, HoldsUnitOfWork, HoldWriter
from hold_service.service_layer.room_ports import RoomStore
from hold_service.service_layer.seat_map_ports import SeatMaps
from ticketing.auth import issue_token
from ticketing.db import create_pool
from ticketing.redis_client import redis_client
from ticketing.settings import ServiceSettings
from ticketing_testing import env, eventually
from ticketing_testing.seat_map_versions import numbered

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
    def __init__(self, client: httpx.AsyncClient, service: Service, app: Any = None) -> None:
        self.client, self.service, self.app = client, service, app
        self.deps, self.redis = service.deps, service.redis

    def client_from(self, address: str) -> httpx.AsyncClient:
        """Another client of the same app, whose requests come from `address` (the TCP peer)."""
        transport = httpx.ASGITransport(app=self.app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://hold", timeout=30)

    async def showtime(self, rows: dict[str, int] | None = None, price: int = 1200) -> int:
        sid = new_id()
        r = await self.client.post("/admin/showtimes", headers=auth(1, "admin"), json={
            "showtimeId": sid, "title": "Test", "startsAt": "2030-01-01T20:00:00Z", "priceCents": price,
            "rows": rows or {"F": 10}})
        assert r.status_code == 201, r.text
        return sid

    async def showtime_of(self, **form: Any) -> int:
        """A showtime from POST /admin/showtimes's full form (`form` over a small hall with prices)."""
        sid = new_id()
        body = {"showtimeId": sid, "title": "Test", "startsAt": "2030-01-01T20:00:00Z", "cinema": "Cine", "hall": "1",
                "layout": [{"row": "F", "blocks": [{"from": 1, "to": 10}]}],
                "prices": {"STANDARD": {"ADULT": 1200, "CHILD": 800}}, **form}
        r = await self.client.post("/admin/showtimes", headers=auth(1, "admin"), json=body)
        assert r.status_code == 201, r.text
        return sid

    async def book(self, booking_id: str, paid: int, payment_id: uuid.UUID | None = None) -> str:
        """The hold's payment succeeded, applied as the PaymentSucceeded consumer applies it."""
        async with self.service.pool.acquire() as conn, conn.transaction():
            return await confirm_booking(ConfirmBooking(uuid.UUID(booking_id), payment_id or uuid.uuid4(), paid),
                                         PgHoldsUnitOfWork(conn=conn))

    async def hold(self, sid: int, seats: list[str], customer: int | None = None,
                   **headers: str) -> httpx.Response:
        return await self.client.post(f"/showtimes/{sid}/holds", json={"seats": seats},
                                      headers={**auth(customer or new_id()), **headers})


@pytest_asyncio.fixture
async def start(hold_dsn: str, redis_url: str) -> AsyncIterator[Callable[..., Any]]:
    """`async with start(hold_ttl_seconds=2) as svc:` runs the app with those settings."""
    @asynccontextmanager
    async def run(**overrides: Any) -> AsyncIterator[Running]:
        # Every test client is 127.0.0.1: the per-address limits are high unless a test sets them.
        overrides.setdefault("hold_rate_limit_per_ip_per_minute", 10**9)
        overrides.setdefault("seat_map_max_streams_per_address", 10**6)
        # Hundreds of customers on one showtime would open its automatic room (tests/integration/test_room_rush.py
        # turns it on): off unless a test sets it.
        overrides.setdefault("waiting_room_auto_default", False)
        overrides.setdefault("shed_max_in_flight", 0)  # R1 sends 200 holds at once
        settings = HoldSettings(database_url=overrides.pop("database_url", hold_dsn),
                                redis_url=overrides.pop("redis_url", redis_url),
                                jwt_secret=SECRET, db_pool_max=20, **overrides)
        app = get_application(settings)
        logging.getLogger("httpx").setLevel(logging.WARNING)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://hold", timeout=30) as client:
                yield Running(client, app.state.service, app)
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


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most (start, end) intervals that overlap at any moment (admission slots held at once)."""
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


@pytest.fixture
def h() -> Any:
    """The helpers above (test modules cannot import conftest under --import-mode=importlib)."""
    from types import SimpleNamespace

    return SimpleNamespace(new_id=new_id, auth=auth, seat_rows=seat_rows,
                           assert_single_holders=assert_single_holders, open_ports=open_ports,
                           most_at_once=most_at_once, numbered=numbered)


@dataclass
class Ports:
    """The ports of one implementation, and what a contract test needs around them: time passing (the fakes'
    clock, or a real wait) and the events recorded for a booking (the outbox, as dicts in JSON form)."""

    kind: str
    uow: Callable[[], HoldsUnitOfWork]
    writer: HoldWriter
    admission: Admission
    seat_maps: SeatMaps
    elapse: Callable[[float], Awaitable[None]]
    events: Callable[[uuid.UUID], Awaitable[list[dict[str, Any]]]]
    now: Callable[[], datetime] = lambda: datetime.now(UTC)  # the fakes' clock, or Postgres' (the wall clock)
    rooms: RoomStore | None = None

    async def showtime(self, seats: int = 6, price_cents: int = 1200, layout: list[dict[str, Any]] | None = None,
                       prices: Prices | None = None, starts_in: timedelta | None = None,
                       cinema: str | None = None) -> int:
        """A new showtime with seats A1..A<seats> at one ADULT price (or the hall's `layout` with its `prices`),
        created through the repository; on 1 Jan 2031, or `starts_in` from now."""
        sid = new_id()
        starts_at = datetime(2031, 1, 1, tzinfo=UTC) if starts_in is None else self.now() + starts_in
        async with self.uow() as uow:
            details = ShowtimeDetails(sid, "Contract", starts_at, prices or {"STANDARD": {"ADULT": price_cents}},
                                      cinema=cinema)
            places = layout_hall(layout) if layout is not None else rows_hall({"A": seats})
            assert await uow.holds.add_showtime(details, places)
            await uow.commit()
        return sid

    @staticmethod
    def request(showtime_id: int, seats: list[str], customer: int | None = None, ttl: float = 600,
                cap: int = 8, hold_id: uuid.UUID | None = None, types: dict[str, str] | None = None,
                close_minutes: float = 0) -> TakeSeats:
        codes = sorted(seats)
        return TakeSeats(showtime_id=showtime_id, seats=codes, hold_id=hold_id or uuid.uuid4(),
                         customer_id=customer or new_id(), ttl_seconds=ttl, booking_id=uuid.uuid4(), cap=cap,
                         ticket_types=tuple((types or {}).get(c, "ADULT") for c in codes),
                         close_minutes=close_minutes)

    async def take(self, showtime_id: int, seats: list[str], **kw: Any) -> tuple[TakeSeats, Verdict]:
        request = self.request(showtime_id, seats, **kw)
        return request, await self.writer.take(request)

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        async with self.uow() as uow:
            return await uow.holds.get(hold_id)

    async def booked(self, showtime_id: int, seats: list[str]) -> TakeSeats:
        """A hold of `seats`, confirmed (paid 1000 cents)."""
        request, _ = await self.take(showtime_id, seats)
        async with self.uow() as uow:
            assert await uow.holds.confirm(request.hold_id, uuid.uuid4(), 1000) is not None
            await uow.commit()
        return request


@pytest_asyncio.fixture(params=["fake", "real"])
async def ports(request: pytest.FixtureRequest, fakes: ModuleType, hold_dsn: str,
                redis_url: str) -> AsyncIterator[Ports]:
    """The contract tests' subject: every port as a fake, then as the real adapter (test_contract_*.py)."""
    async with open_ports(request.param, fakes, hold_dsn, redis_url) as opened:
        yield opened


@asynccontextmanager
async def open_ports(kind: str, fakes: ModuleType, dsn: str, redis_url: str,
                     per_minute: int = 3, per_address: int = 10**6, cluster_nodes: str = "") -> AsyncIterator[Ports]:
    """`kind`: "fake" (tests/fakes/), "real" (Postgres and Redis, wired as bootstrap.py wires them, the gate
    on), "real-cluster" (the same on the Redis Cluster `cluster_nodes`) or "real-gate-off" (the gate off)."""
    if kind == "fake":
        world = fakes.fake_deps(hold_rate_limit_per_minute=per_minute, hold_rate_limit_per_ip_per_minute=per_address)

        async def advance(seconds: float) -> None:
            world.clock.advance(seconds)

        async def recorded(booking_id: uuid.UUID) -> list[dict[str, Any]]:
            return [e.model_dump(mode="json") for e in world.outbox() if e.bookingId == booking_id]

        d = world.deps
        yield Ports(kind, d.uow, d.writer, d.admission, d.seat_maps, advance, recorded, world.clock.now, d.rooms)
        return
    pool = await create_pool(dsn, min_size=1, max_size=8)
    guard = RedisGuard(redis_client(ServiceSettings(redis_url=redis_url, redis_cluster_nodes=cluster_nodes), 2.0),
                       retry_after=1.0)

    async def outbox(booking_id: uuid.UUID) -> list[dict[str, Any]]:
        async with pool.acquire() as conn:
            await numbered(conn)
        rows = await pool.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 "
                                "ORDER BY id", str(booking_id))
        return [json.loads(r["e"]) for r in rows]

    # The seat maps as an API process keeps them: loaded from Postgres, moved on by the notified changes.
    seat_maps = LiveSeatMaps(PgSeatMapSource(pool), capacity=100, missing_seconds=0.0, stale_seconds=2.0,
                             stream_buffer_bytes=1 << 16, max_streams=10)
    feed, stop = PgSeatMapFeed(dsn, seat_maps), asyncio.Event()
    numberer = SeatMapNumberer(pool, interval_seconds=0.05)
    following, numbering = asyncio.create_task(feed.run(stop)), asyncio.create_task(numberer.run(stop))
    try:
        await asyncio.wait_for(feed.listening.wait(), 10)
        yield Ports(kind, lambda: PgHoldsUnitOfWork(pool), PostgresHoldWriter(pool, numberer.kick),
                    RedisAdmission(guard, RateLimits(guard, per_minute, per_address),
                                   SeatGate(guard, enabled=kind != "real-gate-off")),
                    seat_maps, asyncio.sleep, outbox, rooms=PgRoomStore(pool, cache_seconds=0))
    finally:
        stop.set()
        await following
        await numbering
        await guard.client.aclose()
        await pool.close()


class Rooms:
    """The waiting room through its API (tests/integration/test_waiting_room*.py)."""

    @staticmethod
    async def configure(svc: Running, sid: int, limit: int, opens_at: str | None = None,
                        enabled: bool = True) -> httpx.Response:
        body: dict[str, Any] = {"enabled": enabled, "activeLimit": limit}
        if opens_at is not None:
            body["opensAt"] = opens_at
        r = await svc.client.put(f"/admin/showtimes/{sid}/waiting-room", json=body, headers=auth(1, "admin"))
        assert r.status_code == 200, r.text
        return r

    @staticmethod
    async def join(client: httpx.AsyncClient, sid: int, customer: int) -> httpx.Response:
        return await client.post(f"/showtimes/{sid}/queue", headers=auth(customer))

    @staticmethod
    async def poll(client: httpx.AsyncClient, ticket: str, customer: int) -> httpx.Response:
        return await client.get(f"/queue/{ticket}", headers=auth(customer))

    @classmethod
    async def admitted(cls, client: httpx.AsyncClient, ticket: str, customer: int, timeout: float = 10) -> str:
        """Poll until admitted; the admission token."""
        async def token() -> str | None:
            r = await cls.poll(client, ticket, customer)
            assert r.status_code == 200, r.text
            return r.json()["admissionToken"] if r.json()["admitted"] else None
        found: str = await eventually(token, timeout=timeout, interval=0.05)
        return found

    @staticmethod
    async def pay(svc: Running, hold: dict[str, Any], customer: int) -> None:
        """PaymentSucceeded for the hold, through the consumer's handler, in a transaction (as the consumer)."""
        from hold_service.entrypoints.consumer import on_payment_succeeded
        from ticketing.events import booking_event

        event = booking_event("PaymentSucceeded", source="payment-service", booking_id=hold["bookingId"],
                              showtime_id=hold["showtimeId"], customer_id=customer,
                              data={"paymentId": str(uuid.uuid4()), "amountCents": hold["amountCents"]})
        async with svc.service.pool.acquire() as conn, conn.transaction():
            await on_payment_succeeded(svc.deps)(conn, event)  # type: ignore[arg-type]


    @staticmethod
    async def expire(svc: Running, hold: dict[str, Any], customer: int) -> None:
        """The hold's SeatsReleased{EXPIRED}, through the consumer's handler, as the worker applies it."""
        from hold_service.entrypoints.consumer import on_seats_released
        from ticketing.events import booking_event

        event = booking_event("SeatsReleased", source="hold-service", booking_id=hold["bookingId"],
                              showtime_id=hold["showtimeId"], customer_id=customer,
                              data={"holdId": hold["holdId"], "seats": hold["seats"], "reason": "EXPIRED",
                                    "seatMapVersion": 1})
        async with svc.service.pool.acquire() as conn, conn.transaction():
            await on_seats_released(svc.deps)(conn, event)  # type: ignore[arg-type]


@pytest.fixture
def rooms() -> type[Rooms]:
    return Rooms


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Records every run of the statement that decides holds (sql take_seats): ("together", holds in the
    batch) for a batch of the writer, ("alone", 1) for a hold asked on its own."""
    seen: list[tuple[str, int]] = []
    together, alone = repository.take_together, repository.take

    async def take_together(conn: Any, showtime_id: int, requests: list[Any]) -> Any:
        seen.append(("together", len(requests)))
        return await together(conn, showtime_id, requests)

    async def take(conn: Any, request: Any, cause: str) -> Any:
        seen.append(("alone", 1))
        return await alone(conn, request, cause)

    monkeypatch.setattr(repository, "take_together", take_together)
    monkeypatch.setattr(repository, "take", take)
    return seen
