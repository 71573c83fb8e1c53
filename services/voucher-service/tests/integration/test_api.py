"""The HTTP contract (docs/api) through the real app, lifespan and all."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from api_kit import ADMIN, SERVICE, api_client, auth, create, voucher_body
from ticketing_testing import free_port
from voucher_testkit import assert_invariant, forwarder, unique_code, unique_customer

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture
async def api_redis_down(voucher_dsn: str, kafka_bootstrap: str) -> AsyncIterator[httpx.AsyncClient]:
    async for client in api_client(voucher_dsn, kafka_bootstrap, "redis://127.0.0.1:1/0"):
        yield client


@pytest.mark.parametrize("flash", [False, True])
async def test_reservation_contract(api: httpx.AsyncClient, pool: asyncpg.Pool, flash: bool) -> None:
    code = await create(api, flashSale=flash)
    customer, order = unique_customer(), str(uuid.uuid4())
    body = {"customerId": customer, "orderId": order, "orderAmount": 5000}
    first = await api.post(f"/vouchers/{code}/reservations", json=body, headers=SERVICE)
    again = await api.post(f"/vouchers/{code}/reservations", json=body, headers=SERVICE)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() == {"orderId": order, "discountAmount": 700}
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
    for starts_at in ("0001-01-01T00:00:06+03:00", "2030-01-01T00:00:00"):  # year 0 in UTC (found by S3); no offset
        response = await api.post("/admin/vouchers", json=voucher_body(code, startsAt=starts_at), headers=ADMIN)
        assert (response.status_code, response.json()["error"]) == (422, "VALIDATION_ERROR"), starts_at
    response = await api.post("/admin/vouchers", headers=ADMIN, json=voucher_body(
        unique_code("A"), startsAt="2030-01-01T03:00:00+03:00", endsAt="2030-01-01T01:00:00+00:00"))
    assert response.status_code == 201, response.text  # any offset is fine, kept as UTC
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


# Kafka down when the API starts: the API starts, normal mode works, flash answers 503, /readyz says kafka
# is down, and the producer connects once Kafka is back (a forwarder on a dead port: the shared broker is
# never stopped).
def _body() -> dict[str, object]:
    return {"customerId": unique_customer(), "orderId": str(uuid.uuid4()), "orderAmount": 5000}


async def test_api_starts_without_kafka_and_reconnects(voucher_dsn: str, redis_url: str, kafka_bootstrap: str,
                                                       pool: asyncpg.Pool, reserved_consumer: None) -> None:
    port = free_port()  # nothing listens here yet: Kafka is "down"
    async for api in api_client(voucher_dsn, f"127.0.0.1:{port}", redis_url):
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
    for _ in range(300):  # 60 s: the writer reads the whole topic's history first, on a busy machine
        if (used := await assert_invariant(pool, code)) >= 1:
            return used
        await asyncio.sleep(0.2)
    return 0
