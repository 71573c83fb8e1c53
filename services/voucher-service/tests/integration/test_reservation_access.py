"""Issue 11, case 1: reservations are made, confirmed and released only by payment-service (role service).

A customer (or an admin) gets 404 NOT_FOUND on every reservation route, for his own reservation too: no
existence oracle, and no way to give a use back after his payment took the discount.
"""

from __future__ import annotations

import uuid

import asyncpg
import httpx
import pytest
from api_kit import ADMIN, SERVICE, auth, create
from voucher_testkit import assert_invariant, unique_customer

pytestmark = pytest.mark.integration


def _reservation(customer: int) -> dict[str, object]:
    return {"customerId": customer, "orderId": str(uuid.uuid4()), "orderAmount": 5000}


def _refused(response: httpx.Response) -> bool:
    assert response.status_code == 404, f"{response.status_code} {response.text}"
    return bool(response.json()["error"] == "NOT_FOUND")


@pytest.mark.parametrize("flash", [False, True])
async def test_a_customer_cannot_give_back_the_use_his_payment_took(api: httpx.AsyncClient, pool: asyncpg.Pool,
                                                                    flash: bool) -> None:
    """totalLimit 1: A's checkout reserves it; A's DELETE with his own token is refused (it was 204, and then
    B's checkout got the discount too: two discounted payments for a limit of 1)."""
    code = await create(api, totalLimit=1, flashSale=flash)
    a, b = unique_customer(), unique_customer()
    taken = _reservation(a)
    response = await api.post(f"/vouchers/{code}/reservations", json=taken, headers=SERVICE)
    assert response.status_code == 201, response.text
    order = taken["orderId"]
    for token in (auth(a), ADMIN):
        assert _refused(await api.delete(f"/vouchers/{code}/reservations/{order}", headers=token))
        assert _refused(await api.post(f"/vouchers/{code}/reservations/{order}/confirm", headers=token))
    response = await api.post(f"/vouchers/{code}/reservations", json=_reservation(b), headers=SERVICE)
    assert (response.status_code, response.json()["error"]) == (409, "OUT_OF_STOCK")
    if not flash:
        assert await assert_invariant(pool, code) == 1


async def test_only_the_service_role_reserves(api: httpx.AsyncClient) -> None:
    """The hot path too: a customer reserving for himself, or an admin, gets 404 and nothing is taken; the
    refusal comes before the body is read (no 422 that would tell the route exists for him)."""
    code = await create(api, totalLimit=1)
    customer = unique_customer()
    for token in (auth(customer), ADMIN):
        assert _refused(await api.post(f"/vouchers/{code}/reservations", json=_reservation(customer),
                                             headers=token))
        assert _refused(await api.post(f"/vouchers/{code}/reservations", content=b"{", headers=token))
    assert (await api.post(f"/vouchers/{code}/reservations", json=_reservation(customer))).status_code == 401
    response = await api.post(f"/vouchers/{code}/reservations", json=_reservation(customer), headers=SERVICE)
    assert response.status_code == 201, response.text
