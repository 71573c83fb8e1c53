"""Load shedding (ticketing.api.shedding): past the process' limit of work in flight a request gets an
immediate 503 UNAVAILABLE with Retry-After, reads before holds before the payment path; health, readiness and
metrics never; the limit is fixed and holds; a short queue hands a freed slot to the most important waiter."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import REGISTRY
from starlette.types import Scope
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.api.limiter import Limiter, Priority
from ticketing.api.shedding import RouteTable, ShedRoute
from ticketing.settings import ServiceSettings
from ticketing.tokens import TokenVerifier

router = APIRouter()
gate = asyncio.Event()
called: list[str] = []


async def _answer(request: Request) -> Response:
    called.append(request.url.path)
    if request.query_params.get("slow"):
        await gate.wait()
    return JSONResponse({"path": request.url.path})


@router.get("/showtimes/{sid}/seats")
async def read(request: Request) -> Response:
    return await _answer(request)


@router.get("/cached/{sid}")
async def cached(request: Request) -> Response:
    return await _answer(request)


@router.post("/showtimes/{sid}/holds")
async def hold(request: Request) -> Response:
    return await _answer(request)


@router.post("/payments/callback")
async def pay(request: Request) -> Response:
    return await _answer(request)


def in_memory(scope: Scope) -> bool:
    return scope["path"].endswith("/7")


ROUTES = [ShedRoute("GET", "/showtimes/{sid}/seats", Priority.BROWSE),
          ShedRoute("GET", "/cached/{sid}", Priority.BROWSE, from_memory=in_memory),
          ShedRoute("POST", "/showtimes/{sid}/holds", Priority.HOLD),
          ShedRoute("POST", "/payments/callback", Priority.PAY)]


def client(limit: int = 4, queue_ms: float = 0.0) -> httpx.AsyncClient:
    """Limit 4: reads are admitted under 2 in flight, holds under 3, the payment path under 4."""
    settings = ServiceSettings(app_env="dev", shed_max_in_flight=limit, shed_queue_timeout_ms=queue_ms)
    app = build_app(title="shed-test", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=65536,
                    hot_routes=[HotRoute("POST", "/showtimes/{sid}/holds", hold)], load=settings, shed_routes=ROUTES)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


@pytest.fixture(autouse=True)
def _closed_gate() -> None:
    gate.clear()
    called.clear()


async def in_flight(c: httpx.AsyncClient, n: int, method: str, path: str) -> list[asyncio.Task[httpx.Response]]:
    """`n` requests held in the app until the gate opens."""
    reached = called.count(path) + n
    tasks = [asyncio.ensure_future(c.request(method, path, params={"slow": "1"})) for _ in range(n)]
    while called.count(path) < reached:
        await asyncio.sleep(0.001)
    return tasks


async def test_reads_then_holds_are_shed_and_the_payment_path_last() -> None:
    async with client() as c:
        slow = await in_flight(c, 2, "POST", "/showtimes/1/holds")  # 2 in flight: reads are past their share
        assert (await c.get("/showtimes/1/seats")).status_code == 503
        assert (await c.post("/showtimes/1/holds")).status_code == 200
        slow += await in_flight(c, 1, "POST", "/showtimes/2/holds")  # 3: holds are past theirs
        assert (await c.post("/showtimes/1/holds")).status_code == 503
        assert (await c.post("/payments/callback")).status_code == 200
        slow += await in_flight(c, 1, "POST", "/payments/callback")  # 4: the limit
        assert (await c.post("/payments/callback")).status_code == 503
        for path in ("/healthz", "/readyz", "/metrics"):
            assert (await c.get(path)).status_code == 200, path
        gate.set()
        assert [r.status_code for r in await asyncio.gather(*slow)] == [200] * 4
        assert (await c.get("/showtimes/1/seats")).status_code == 200  # the slots came back


async def test_the_refusal_is_immediate_in_the_contracts_format_with_retry_after() -> None:
    async with client(limit=2) as c:
        slow = await in_flight(c, 2, "POST", "/payments/callback")
        before = list(called)
        r = await c.post("/showtimes/9/holds", json={"seats": ["A1"]})  # answered while the gate is closed
        assert called == before  # neither the app nor the body was touched
        gate.set()
        await asyncio.gather(*slow)
    assert r.status_code == 503
    assert r.json() == {"error": "UNAVAILABLE", "message": "the service is at its limit of work in flight, "
                        "try again shortly", "retryAfterSeconds": 1}
    assert r.headers["retry-after"] == "1" and r.headers["content-type"] == "application/json"
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_a_read_the_process_answers_from_memory_is_served_at_the_limit() -> None:
    async with client(limit=2) as c:
        slow = await in_flight(c, 2, "POST", "/payments/callback")
        memory, other = await c.get("/cached/7"), await c.get("/cached/8")
        gate.set()
        await asyncio.gather(*slow)
    assert (memory.status_code, other.status_code) == (200, 503)


async def test_shed_requests_are_counted_by_service_priority_and_route() -> None:
    labels = {"service": "shed-test", "priority": "browse", "route": "/showtimes/{sid}/seats"}
    before = REGISTRY.get_sample_value("ticketing_http_requests_shed_total", labels) or 0.0
    async with client(limit=2) as c:
        slow = await in_flight(c, 1, "POST", "/payments/callback")
        assert (await c.get("/showtimes/5/seats")).status_code == 503
        gate.set()
        await asyncio.gather(*slow)
    assert REGISTRY.get_sample_value("ticketing_http_requests_shed_total", labels) == before + 1


async def test_the_queue_hands_a_freed_slot_to_the_most_important_waiter() -> None:
    async with client(limit=4, queue_ms=5000) as c:
        slow = await in_flight(c, 2, "POST", "/payments/callback")
        read = asyncio.ensure_future(c.get("/showtimes/1/seats"))  # waits: reads are past their share
        slow += await in_flight(c, 2, "POST", "/payments/callback")  # the limit
        callback = asyncio.ensure_future(c.post("/payments/callback"))  # waits too
        await asyncio.sleep(0.01)
        assert not read.done() and not callback.done()
        gate.set()  # every slot frees: the callback first, the read once under its share
        assert (await callback).status_code == 200 and (await read).status_code == 200
        await asyncio.gather(*slow)
        assert called.index("/payments/callback", 4) < called.index("/showtimes/1/seats")


async def test_a_waiter_gets_its_503_when_the_queue_timeout_passes() -> None:
    async with client(limit=2, queue_ms=20) as c:
        slow = await in_flight(c, 2, "POST", "/payments/callback")
        r = await c.post("/payments/callback")
        gate.set()
        await asyncio.gather(*slow)
    assert r.status_code == 503


async def test_past_as_many_waiters_as_the_limit_a_request_is_refused_at_once() -> None:
    async with client(limit=2, queue_ms=60_000) as c:
        slow = await in_flight(c, 2, "POST", "/payments/callback")
        waiting = [asyncio.ensure_future(c.post("/payments/callback")) for _ in range(2)]
        await asyncio.sleep(0.01)
        assert (await c.post("/payments/callback")).status_code == 503  # not queued for a minute
        gate.set()
        assert [r.status_code for r in await asyncio.gather(*slow, *waiting)] == [200] * 4


async def test_zero_turns_it_off() -> None:
    async with client(limit=0) as c:
        slow = await in_flight(c, 10, "GET", "/showtimes/1/seats")
        assert (await c.get("/showtimes/1/seats")).status_code == 200
        gate.set()
        assert {r.status_code for r in await asyncio.gather(*slow)} == {200}


async def test_the_limit_holds_under_a_storm_and_every_slot_comes_back() -> None:
    limiter = Limiter(8, queue_timeout_ms=1)
    peak = 0

    async def one(priority: int) -> bool:
        nonlocal peak
        if not await limiter.acquire(priority):
            return False
        peak = max(peak, limiter.in_flight)
        await asyncio.sleep(0.002)
        limiter.release()
        return True

    admitted = await asyncio.gather(*(one(n % 3) for n in range(300)))
    assert peak == 8 and limiter.in_flight == 0  # fixed: it neither grows past the limit nor leaks
    assert 0 < sum(admitted) < 300


async def test_a_waiter_cancelled_after_its_hand_over_gives_the_slot_back() -> None:
    limiter = Limiter(1, queue_timeout_ms=1000)
    assert limiter.try_acquire(Priority.PAY)
    waiter = asyncio.ensure_future(limiter.acquire(Priority.PAY))
    await asyncio.sleep(0)
    limiter.release()  # handed over to the waiter...
    waiter.cancel()  # ...whose client left before it ran
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.in_flight == 0


def test_routes_are_found_by_method_and_template() -> None:
    table = RouteTable([*ROUTES, ShedRoute("GET", "/healthz", Priority.NEVER)])
    assert table.rule("GET", "/showtimes/42/seats")[:2] == (Priority.BROWSE, "/showtimes/{sid}/seats")
    assert table.rule("POST", "/showtimes/42/holds")[:2] == (Priority.HOLD, "/showtimes/{sid}/holds")
    assert table.rule("GET", "/healthz")[:2] == (Priority.NEVER, "/healthz")
    assert table.rule("GET", "/showtimes/42/seats/stream") == (Priority.HOLD, None, None)  # undeclared
    assert table.rule("DELETE", "/showtimes/42/seats") == (Priority.HOLD, None, None)
