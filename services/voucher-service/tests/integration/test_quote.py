"""`GET /vouchers/{code}/quote` (customer) through the real app: reasons, errors, nothing reserved."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis
from api_kit import ADMIN, SERVICE, api_client, auth, create
from voucher_service.adapters.gate import keys
from voucher_testkit import invariant, unique_code, unique_customer

pytestmark = pytest.mark.integration


async def _quote(api: httpx.AsyncClient, code: str, customer: int, amount: object = 5000) -> httpx.Response:
    return await api.get(f"/vouchers/{code}/quote", params={"orderAmount": amount}, headers=auth(customer))


async def _reason(api: httpx.AsyncClient, code: str, customer: int, amount: int = 5000) -> str | None:
    response = await _quote(api, code, customer, amount)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"code", "eligible", "discountAmount", "reason"} and body["code"] == code
    assert body["eligible"] == (body["reason"] is None)
    assert body["discountAmount"] == (700 if body["eligible"] else 0)
    reason: str | None = body["reason"]
    return reason


async def _reserve(api: httpx.AsyncClient, code: str, customer: int) -> None:
    body = {"customerId": customer, "orderId": str(uuid.uuid4()), "orderAmount": 5000}
    response = await api.post(f"/vouchers/{code}/reservations", json=body, headers=SERVICE)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("flash", [False, True])
async def test_quote_reasons_and_nothing_reserved(api: httpx.AsyncClient, pool: asyncpg.Pool, flash: bool) -> None:
    code = await create(api, totalLimit=1, flashSale=flash)
    buyer, other = unique_customer(), unique_customer()
    for _ in range(3):
        assert await _reason(api, code, buyer) is None
    assert await invariant(pool, code) == (0, 0, 1)  # quotes reserved nothing
    view = (await api.get(f"/admin/vouchers/{code}", headers=ADMIN)).json()
    assert view["gateRemaining"] == (1 if flash else None)
    assert await _reason(api, code, buyer, 999) == "MIN_ORDER_AMOUNT"
    await _reserve(api, code, buyer)
    assert await _reason(api, code, buyer) == "ALREADY_USED"
    assert await _reason(api, code, other) == "OUT_OF_STOCK"
    now = datetime.now(UTC)
    later = await create(api, flashSale=flash, startsAt=(now + timedelta(hours=1)).isoformat(),
                         endsAt=(now + timedelta(hours=2)).isoformat())
    assert await _reason(api, later, buyer) == "INVALID"
    ended = await create(api, flashSale=flash, startsAt=(now - timedelta(hours=2)).isoformat(),
                         endsAt=(now - timedelta(seconds=1)).isoformat())
    assert await _reason(api, ended, buyer) == "INVALID"
    # An unknown code gets the very same answer: quotes tell nobody which codes exist.
    unknown = unique_code("NONE")
    answers = [(await _quote(api, c, buyer)).json() for c in (ended, unknown)]
    assert [{**a, "code": None} for a in answers] == [{"code": None, "eligible": False, "discountAmount": 0,
                                                       "reason": "INVALID"}] * 2


@pytest.mark.parametrize("flash", [False, True])
async def test_a_window_to_the_ends_of_time_is_read_back_in_utc(api: httpx.AsyncClient, flash: bool) -> None:
    """Postgres stores 0001-01-01T00:00Z as -infinity and the last microsecond of 9999 as +infinity;
    asyncpg reads them back without a time zone (a quote and a reservation answered 500 before)."""
    code = await create(api, flashSale=flash, startsAt="0001-01-01T00:00:00Z", endsAt="9999-12-31T23:59:59.999999Z")
    customer = unique_customer()
    assert await _reason(api, code, customer) is None
    await _reserve(api, code, customer)
    assert await _reason(api, code, customer) == "ALREADY_USED"


async def test_a_flash_quote_answers_from_the_gate_where_loaded(api: httpx.AsyncClient, pool: asyncpg.Pool,
                                                                redis: aioredis.Redis) -> None:
    """The gate took the last use and Postgres has not written it yet: the gate's answer (OUT_OF_STOCK),
    not Postgres'. A gate that is not loaded (before the sale, after a Redis loss) answers from Postgres."""
    code = await create(api, totalLimit=1, flashSale=True)
    remaining = keys(code)[0]
    await redis.set(remaining, 0)  # as if the gate had handed out the use and the writer lagged
    assert await invariant(pool, code) == (0, 0, 1)
    assert await _reason(api, code, unique_customer()) == "OUT_OF_STOCK"
    await redis.delete(remaining)  # not loaded (this voucher's keys only)
    assert await _reason(api, code, unique_customer()) is None


async def test_quote_errors(api: httpx.AsyncClient) -> None:
    code = await create(api)
    customer = unique_customer()
    response = await _quote(api, unique_code("NONE"), customer)
    assert (response.status_code, response.json()["reason"]) == (200, "INVALID")
    for bad in (-1, "ten", 2**63, ""):
        response = await _quote(api, code, customer, bad)
        assert (response.status_code, response.json()["error"]) == (422, "VALIDATION_ERROR"), bad
    response = await api.get(f"/vouchers/{code}/quote", headers=auth(customer))
    assert (response.status_code, response.json()["error"]) == (422, "VALIDATION_ERROR")
    assert (await api.get(f"/vouchers/{code}/quote", params={"orderAmount": 1})).status_code == 401
    schema = (await api.get("/openapi.json")).json()
    reason = schema["components"]["schemas"]["QuotePublic"]["properties"]["reason"]
    assert reason["anyOf"][0]["enum"] == ["INVALID", "MIN_ORDER_AMOUNT", "ALREADY_USED", "OUT_OF_STOCK"]
    assert "429" in schema["paths"]["/vouchers/{code}/quote"]["get"]["responses"]


async def test_quotes_are_limited_per_customer(voucher_dsn: str, kafka_bootstrap: str, redis_url: str) -> None:
    async for api in api_client(voucher_dsn, kafka_bootstrap, redis_url, voucher_quote_rate_limit_per_minute=5):
        code, guesser, other = await create(api), unique_customer(), unique_customer()
        answers = [await _quote(api, unique_code("GUESS") if n % 2 else code, guesser) for n in range(8)]
        assert [a.status_code for a in answers] == [200] * 5 + [429] * 3
        refused = answers[-1]
        assert refused.json()["error"] == "RATE_LIMITED" and 1 <= int(refused.headers["retry-after"]) <= 60
        assert await _reason(api, code, other) is None  # another customer is not affected
