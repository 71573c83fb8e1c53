"""The HTTP contract (DESIGN.md section 3) through the real app, lifespan and all."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from ticketing.auth import issue_token
from ticketing.testing import free_port
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.api.app import get_application
from voucher_testkit import TEST_PREFIX, assert_invariant, forwarder, unique_code, unique_customer

pytestmark = pytest.mark.integration
SECRET = "test-secret-" + "x" * 32


async def _client(voucher_dsn: str, kafka_bootstrap: str, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = VoucherSettings(database_url=voucher_dsn, jwt_secret=SECRET, redis_url=redis_url,
                               kafka_bootstrap_servers=kafka_bootstrap, kafka_group_prefix=TEST_PREFIX)
    app = get_application(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://voucher") as client:
            yield client


@pytest_asyncio.fixture
async def api(voucher_dsn: str, kafka_bootstrap: str, redis_url: str,
              reserved_consumer: None) -> AsyncIterator[httpx.AsyncClient]:
    async for client in _client(voucher_dsn, kafka_bootstrap, redis_url):
        yield client


@pytest_asyncio.fixture
async def api_redis_down(voucher_dsn: str, kafka_bootstrap: str) -> AsyncIterator[httpx.AsyncClient]:
    async for client in _client(voucher_dsn, kafka_bootstrap, "redis://127.0.0.1:1/0"):
        yield client


def auth(sub: int | str, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


ADMIN, SERVICE = auth(1, "admin"), auth(2, "service")


def voucher_body(code: str, **kw: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"code": code, "discountAmount": 700, "minOrderAmount": 1000, "totalLimit": 2, "perUserLimit": 1,
            "startsAt": (now - timedelta(hours=1)).isoformat(), "endsAt": (now + timedelta(hours=1)).isoformat(),
            "flashSale": False, **kw}


async def create(api: httpx.AsyncClient, **kw: Any) -> str:
    code = unique_code("A")
    response = await api.post("/admin/vouchers", json=voucher_body(code, **kw), headers=ADMIN)
    assert response.status_code == 201, response.text
    return code


@pytest.mark.parametrize("flash", [False, True])
async def test_reservation_contract(api: httpx.AsyncClient, pool: asyncpg.Pool, flash: bool) -> None:
    code = await create(api, flashSale=flash)
    customer, order = unique_customer(), str(uuid.uuid4())
    body = {"customerId": customer, "orderId": order, "orderAmount": 5000}
    first = await api.post(f"/vouchers/{code}/reservations", json=body, headers=auth(customer))
    again = await api.post(f"/vouchers/{code}/reservations", json=body, headers=SERVICE)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() == {"orderId": order, "discountAmount": 700}
    other = {"customerId": customer + 1, "orderId": str(uuid.uuid4()), "orderAmount": 5000}
    assert (await api.post(f"/vouchers/{code}/reservations", json=other, headers=auth(customer))).status_code == 404
    small = {**body, "orderId": str(uuid.uuid4()), "orderAmount": 999}
    response = await api.post(f"/vouchers/{code}/reservations", json=small, headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (422, "NOT_ELIGIBLE")
    twice = {**body, "orderId": str(uuid.uuid4())}
    response = await api.post(f"/vouchers/{code}/reservations", json=twice, headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (409, "ALREADY_USED")
    response = await api.post(f"/vouchers/{code}/reservations/{order}/confirm", headers=SERVICE)
    assert response.status_code == 200
    assert (await api.post(f"/vouchers/{code}/reservations/{order}/confirm", headers=SERVICE)).status_code == 200
    last = {"customerId": unique_customer(), "orderId": str(uuid.uuid4()), "orderAmount": 5000}
    assert (await api.post(f"/vouchers/{code}/reservations", json=last, headers=SERVICE)).status_code == 201
    late = {"customerId": unique_customer(), "orderId": str(uuid.uuid4()), "orderAmount": 5000}
    response = await api.post(f"/vouchers/{code}/reservations", json=late, headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (409, "OUT_OF_STOCK")
    assert (await api.delete(f"/vouchers/{code}/reservations/{last['orderId']}", headers=SERVICE)).status_code == 204
    assert (await api.delete(f"/vouchers/{code}/reservations/{last['orderId']}", headers=SERVICE)).status_code == 204
    view = (await api.get(f"/admin/vouchers/{code}", headers=ADMIN)).json()
    assert view["totalLimit"] == 2 and (view["gateRemaining"] is not None) == flash
    if not flash:
        assert await assert_invariant(pool, code) == 1 and view["usedCount"] == 1


async def test_auth_and_errors(api: httpx.AsyncClient) -> None:
    code = unique_code("A")
    assert (await api.post("/admin/vouchers", json=voucher_body(code))).status_code == 401
    assert (await api.post("/admin/vouchers", json=voucher_body(code), headers=auth(5))).status_code == 403
    response = await api.post("/admin/vouchers", json=voucher_body(code, totalLimit=-1), headers=ADMIN)
    assert (response.status_code, response.json()["error"]) == (422, "VALIDATION_ERROR")
    body = {"customerId": 5, "orderId": "o-1", "orderAmount": 5000}
    response = await api.post(f"/vouchers/{code}/reservations", json=body, headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (404, "NOT_FOUND")
    response = await api.delete(f"/vouchers/{code}/reservations/nope", headers=auth(5))
    assert response.status_code == 404


async def test_redis_down_flash_503_normal_unaffected(api_redis_down: httpx.AsyncClient) -> None:
    normal, flash = await create(api_redis_down), await create(api_redis_down, flashSale=True)
    body: Callable[[], dict[str, Any]] = lambda: {  # noqa: E731
        "customerId": unique_customer(), "orderId": str(uuid.uuid4()), "orderAmount": 5000}
    assert (await api_redis_down.post(f"/vouchers/{normal}/reservations", json=body(),
                                      headers=SERVICE)).status_code == 201
    response = await api_redis_down.post(f"/vouchers/{flash}/reservations", json=body(), headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (503, "UNAVAILABLE")
    assert "Redis" in response.json()["message"]


@pytest.mark.parametrize("flash", [False, True])
async def test_customer_releases_only_his_own(api: httpx.AsyncClient, pool: asyncpg.Pool, flash: bool) -> None:
    code = await create(api, flashSale=flash)
    owner, order = unique_customer(), str(uuid.uuid4())
    body = {"customerId": owner, "orderId": order, "orderAmount": 5000}
    assert (await api.post(f"/vouchers/{code}/reservations", json=body, headers=auth(owner))).status_code == 201
    stranger = auth(owner + 1)
    assert (await api.delete(f"/vouchers/{code}/reservations/{order}", headers=stranger)).status_code == 404
    assert (await api.post(f"/vouchers/{code}/reservations/{order}/confirm",
                           headers=stranger)).status_code == 404
    assert (await api.delete(f"/vouchers/{code}/reservations/{order}", headers=auth(owner))).status_code == 204
    if not flash:
        assert await assert_invariant(pool, code) == 0


# Kafka down when the API starts: the API starts, normal mode works, flash answers 503, /readyz says kafka
# is down, and the producer connects once Kafka is back (a forwarder on a dead port: the shared broker is
# never stopped).
def _body() -> dict[str, object]:
    return {"customerId": unique_customer(), "orderId": str(uuid.uuid4()), "orderAmount": 5000}


async def test_api_starts_without_kafka_and_reconnects(voucher_dsn: str, redis_url: str, kafka_bootstrap: str,
                                                       pool: asyncpg.Pool, reserved_consumer: None) -> None:
    port = free_port()  # nothing listens here yet: Kafka is "down"
    async for api in _client(voucher_dsn, f"127.0.0.1:{port}", redis_url):
        normal = await create(api, flashSale=False)
        flash = await create(api, flashSale=True)
        response = await api.post(f"/vouchers/{normal}/reservations", json=_body(), headers=SERVICE)
        assert response.status_code == 201, response.text
        assert await assert_invariant(pool, normal) == 1
        response = await api.post(f"/vouchers/{flash}/reservations", json=_body(), headers=SERVICE)
        assert (response.status_code, response.json()["error"]) == (503, "UNAVAILABLE")
        assert response.headers["Retry-After"] == "1" and "Kafka" in response.json()["message"]
        ready = await api.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["kafka"].startswith("down")
        view = (await api.get(f"/admin/vouchers/{flash}", headers=ADMIN)).json()
        assert view["gateRemaining"] == 2  # the refused request took nothing from the gate
        async with forwarder(port, kafka_bootstrap):  # Kafka is back
            started, status = time.monotonic(), 0
            while time.monotonic() - started < 30 and status != 201:
                await asyncio.sleep(0.5)
                response = await api.post(f"/vouchers/{flash}/reservations", json=_body(), headers=SERVICE)
                status = response.status_code
            assert status == 201, response.text
            print(f"flash producer reconnected {time.monotonic() - started:.1f} s after Kafka came back")
            assert (await api.get("/readyz")).status_code == 200
        assert await _written(pool, flash) == 1


async def _written(pool: asyncpg.Pool, code: str) -> int:
    for _ in range(100):
        if (used := await assert_invariant(pool, code)) >= 1:
            return used
        await asyncio.sleep(0.2)
    return 0
