"""Checkout against real Postgres and the real simulator (hold-service and voucher-service faked)."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from ticketing_testing import transactions_opened

pytestmark = pytest.mark.integration


async def checkout(api, hold_id, customer, key, body=None):  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=10) as c:
        return await c.post(f"{api.url}/holds/{hold_id}/checkout", json=body or {},
                            headers={**api.token(customer), "Idempotency-Key": key})


async def rows(api, sql, *args):  # type: ignore[no-untyped-def]
    async with api.service.pool.acquire() as conn:
        return await conn.fetch(sql, *args)


async def test_checkout_creates_one_pending_payment_and_checkout_started(payment_api, kit) -> None:
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer, amount=2400)
    r = await checkout(payment_api, hold.hold_id, customer, "k1")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["bookingId"] == str(hold.booking_id) and body["amountCents"] == 2400
    payment = (await rows(payment_api, "SELECT * FROM payment WHERE booking_id = $1", hold.booking_id))
    assert [p["status"] for p in payment] == ["PENDING"] and payment[0]["session_id"]
    events = await rows(payment_api, "SELECT convert_from(payload, 'UTF8')::jsonb->>'type' AS t FROM outbox "
                        "WHERE message_key = $1", str(hold.booking_id))
    assert [e["t"] for e in events] == ["CheckoutStarted"]


async def test_a_checkout_opens_a_transaction_only_where_it_writes_two_things_together(payment_api, kit,
                                                                                       monkeypatch) -> None:
    """The key's claim and every read are single statements committing alone (no BEGIN and COMMIT around
    them). Two steps stay transactions: the PENDING payment with its attempts counted, and the session with
    CheckoutStarted. A replay and the payment's status open none."""
    opened = transactions_opened(monkeypatch)
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer)
    first = await checkout(payment_api, hold.hold_id, customer, "tx")
    assert first.status_code == 201 and len(opened) == 2
    opened.clear()
    replay = await checkout(payment_api, hold.hold_id, customer, "tx")
    assert replay.status_code == 201 and replay.json() == first.json() and opened == []
    async with httpx.AsyncClient(timeout=10) as c:
        status = await c.get(f"{payment_api.url}/payments/{first.json()['paymentId']}",
                             headers=payment_api.token(customer))
    assert status.status_code == 200 and status.json()["status"] == "PENDING" and opened == []


async def test_same_key_replays_and_another_body_is_refused(payment_api, kit) -> None:
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer)
    first = await checkout(payment_api, hold.hold_id, customer, "same")
    replays = await asyncio.gather(*(checkout(payment_api, hold.hold_id, customer, "same") for _ in range(5)))
    assert {r.status_code for r in replays} == {201} and all(r.json() == first.json() for r in replays)
    other = await checkout(payment_api, hold.hold_id, customer, "same", {"voucherCode": "X10"})
    assert other.status_code == 422 and other.json()["error"] == "IDEMPOTENCY_KEY_REUSED"
    n = await rows(payment_api, "SELECT count(*) AS n FROM payment WHERE hold_id = $1", hold.hold_id)
    assert n[0]["n"] == 1


async def test_concurrent_first_requests_with_one_key_make_one_session(payment_api, kit) -> None:
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer)
    results = await asyncio.gather(*(checkout(payment_api, hold.hold_id, customer, "race") for _ in range(10)))
    assert {r.status_code for r in results} == {201}
    assert len({r.json()["redirectUrl"] for r in results}) == 1
    started = await rows(payment_api, "SELECT 1 FROM outbox WHERE message_key = $1", str(hold.booking_id))
    assert len(started) == 1


async def test_another_customers_hold_is_not_found(payment_api, kit) -> None:
    owner, intruder = kit.unique_customer(), kit.unique_customer() + 1
    hold = payment_api.holds.add(owner)
    r = await checkout(payment_api, hold.hold_id, intruder, "k")
    assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"
    assert await rows(payment_api, "SELECT 1 FROM payment WHERE hold_id = $1", hold.hold_id) == []
    unknown = await checkout(payment_api, uuid.uuid4(), owner, "k")
    assert unknown.status_code == 404


async def test_inactive_hold_missing_key_and_voucher_errors(payment_api, kit) -> None:
    customer = kit.unique_customer()
    expired = payment_api.holds.add(customer, ttl=-1)
    assert (await checkout(payment_api, expired.hold_id, customer, "a")).json()["error"] == "HOLD_NOT_ACTIVE"
    hold = payment_api.holds.add(customer)
    async with httpx.AsyncClient() as c:
        r = await c.post(f"{payment_api.url}/holds/{hold.hold_id}/checkout", headers=payment_api.token(customer))
    assert r.status_code == 422
    gone = await checkout(payment_api, hold.hold_id, customer, "v", {"voucherCode": "GONE"})
    assert gone.status_code == 409 and gone.json()["error"] == "OUT_OF_STOCK"
    ok = await checkout(payment_api, hold.hold_id, customer, "v2", {"voucherCode": "TEN"})
    assert ok.status_code == 201 and (ok.json()["amountCents"], ok.json()["discountCents"]) == (1900, 500)


async def test_a_late_checkout_gets_a_whole_session_and_its_hold_outlives_it_by_the_grace(payment_api, kit) -> None:
    customer = kit.unique_customer()
    hold = payment_api.holds.add(customer, ttl=60, age=540)  # a minute left of its ten, the session TTL is 480 s
    before = datetime.now(UTC)
    r = await checkout(payment_api, hold.hold_id, customer, "exp")
    (row,) = await rows(payment_api, "SELECT expires_at FROM payment WHERE hold_id = $1", hold.hold_id)
    ends = row["expires_at"]
    assert before + timedelta(seconds=480) <= ends <= datetime.now(UTC) + timedelta(seconds=480)
    assert datetime.fromisoformat(r.json()["expiresAt"]) == ends
    extended = payment_api.holds.holds[hold.hold_id].expires_at
    assert extended == ends + timedelta(seconds=payment_api.settings.payment_confirm_grace_seconds)


async def test_too_late_in_the_hold_is_409_and_a_fourth_checkout_is_checkout_limit(payment_api, kit) -> None:
    customer = kit.unique_customer()
    late = payment_api.holds.add(customer, ttl=150, age=1050)  # 30 s of session left: under the minimum
    r = await checkout(payment_api, late.hold_id, customer, "late")
    assert (r.status_code, r.json()["error"]) == (409, "HOLD_NOT_ACTIVE") and "hold the seats again" in \
        r.json()["message"]
    hold = payment_api.holds.add(customer)
    for attempt in range(3):
        ok = await checkout(payment_api, hold.hold_id, customer, f"try{attempt}", {"voucherCode": "TEN"})
        assert ok.status_code == 201 and ok.json()["discountCents"] == 500  # the voucher comes back each time
        async with httpx.AsyncClient() as c:
            session = ok.json()["redirectUrl"].rsplit("/", 1)[1]
            await c.post(f"{payment_api.settings.stripe_api_base}/sim/sessions/{session}/pay",
                         json={"outcome": "failed", "delivery": "never"})
    limit = await checkout(payment_api, hold.hold_id, customer, "try3", {"voucherCode": "TEN"})
    assert (limit.status_code, limit.json()["error"]) == (409, "CHECKOUT_LIMIT")
    assert len(await rows(payment_api, "SELECT 1 FROM payment WHERE hold_id = $1", hold.hold_id)) == 3
