"""Stripe's webhooks (R8, R11, S1, R21), reconciliation (R10) and the refund reaction, on real Postgres and
the real simulator. Outcomes are read from Postgres (payment status, outbox rows), not from responses."""

import asyncio
import uuid

import httpx
import pytest
from payment_service.adapters.repository import PgPaymentsUnitOfWork
from payment_service.domain.commands import RefundFailedBooking, StartCheckout
from payment_service.service_layer import money
from payment_service.service_layer.checkout import start_checkout
from payment_service.service_layer.reactions import refund_failed_booking
from ticketing_testing import merchant_auth

pytestmark = pytest.mark.integration


async def started(api, kit, ttl=600, age=0):  # type: ignore[no-untyped-def]
    customer = kit.unique_customer()
    hold = api.holds.add(customer, ttl=ttl, age=age)
    async with httpx.AsyncClient(timeout=10) as c:
        r = await c.post(f"{api.url}/holds/{hold.hold_id}/checkout", json={},
                         headers={**api.token(customer), "Idempotency-Key": "k"})
    assert r.status_code == 201, r.text
    payment_id = r.json()["paymentId"]
    async with api.service.pool.acquire() as conn:
        session_id = await conn.fetchval("SELECT session_id FROM payment WHERE payment_id = $1::uuid", payment_id)
    return payment_id, session_id, hold


async def sim_pay(api, session_id, outcome="succeeded", delivery="never"):  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient() as c:
        r = await c.post(f"{api.settings.stripe_api_base}/sim/sessions/{session_id}/pay",
                         json={"outcome": outcome, "delivery": delivery})
    assert r.status_code == 200, r.text


async def post_callback(api, raw, header):  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=10) as c:
        headers = {"Content-Type": "application/json", **({"Stripe-Signature": header} if header else {})}
        return await c.post(f"{api.url}/payments/callback", content=raw, headers=headers)


async def state(api, payment_id):  # type: ignore[no-untyped-def]
    async with api.service.pool.acquire() as conn:
        status = await conn.fetchval("SELECT status FROM payment WHERE payment_id = $1::uuid", payment_id)
        events = await conn.fetch("SELECT convert_from(payload, 'UTF8')::jsonb->>'type' AS t FROM outbox "
                                  "WHERE convert_from(payload, 'UTF8')::jsonb->'data'->>'paymentId' = $1 "
                                  "ORDER BY id", payment_id)
    return status, [e["t"] for e in events if e["t"] != "CheckoutStarted"]


async def test_r8_one_callback_replayed_100_times_10_at_once(payment_api, kit) -> None:
    payment_id, session_id, _ = await started(payment_api, kit)
    await sim_pay(payment_api, session_id)
    raw, header = kit.signed(kit.callback_body(session_id, payment_id))
    sem = asyncio.Semaphore(10)

    async def one():  # type: ignore[no-untyped-def]
        async with sem:
            return await post_callback(payment_api, raw, header)

    responses = await asyncio.gather(*(one() for _ in range(100)))
    outcomes = [r.json().get("outcome") for r in responses]
    assert {r.status_code for r in responses} == {200}
    assert outcomes.count("applied") == 1 and outcomes.count("duplicate") == 99
    assert await state(payment_api, payment_id) == ("SUCCEEDED", ["PaymentSucceeded"])


async def test_r11_failed_after_paid_and_succeeded_after_failed_follow_the_gateway(payment_api, kit) -> None:
    paid_id, paid_session, _ = await started(payment_api, kit)
    await sim_pay(payment_api, paid_session, "succeeded")
    # A stale `failed` arrives first, then the `succeeded`: the gateway says paid both times.
    for kind in ("checkout.session.async_payment_failed", "checkout.session.completed"):
        r = await post_callback(payment_api, *kit.signed(kit.callback_body(paid_session, paid_id, kind)))
        assert r.status_code == 200
    assert await state(payment_api, paid_id) == ("SUCCEEDED", ["PaymentSucceeded"])

    failed_id, failed_session, _ = await started(payment_api, kit)
    await sim_pay(payment_api, failed_session, "failed")
    for kind in ("checkout.session.completed", "checkout.session.async_payment_failed"):
        await post_callback(payment_api, *kit.signed(kit.callback_body(failed_session, failed_id, kind)))
    assert await state(payment_api, failed_id) == ("FAILED", ["PaymentFailed"])


async def test_s1_every_bad_signature_is_401_and_changes_nothing(payment_api, kit) -> None:
    payment_id, session_id, _ = await started(payment_api, kit)
    await sim_pay(payment_api, session_id)
    body = kit.callback_body(session_id, payment_id)
    raw, good = kit.signed(body)
    now = int(good.split(",")[0][2:])
    bad = [None, "", "nonsense", f"t={now}", kit.signed(body, secret="wrong-secret")[1],
           kit.signed(body, t=now - 330)[1], kit.signed(body, t=now + 330)[1],  # 300 s tolerance, margin for slow runs
           f"t={now},v1={'0' * 64},v1={'f' * 64}", good.replace("v1=", "v0=")]
    for header in bad:
        r = await post_callback(payment_api, raw, header)
        assert r.status_code == 401, header
    tampered = await post_callback(payment_api, raw.replace(b"session.completed", b"session.completeD"), good)
    assert tampered.status_code == 401
    assert await state(payment_api, payment_id) == ("PENDING", [])
    async with payment_api.service.pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM gateway_event WHERE event_id = $1", body["id"]) == 0
    several = f"t={now},v1={'0' * 64},{good.split(',')[1]}"  # key rotation: any v1 may match
    assert (await post_callback(payment_api, raw, several)).status_code == 200
    assert await state(payment_api, payment_id) == ("SUCCEEDED", ["PaymentSucceeded"])


async def test_r10_no_callback_reconciliation_settles_paid_and_expired(payment_api, kit) -> None:
    paid_id, paid_session, _ = await started(payment_api, kit)
    await sim_pay(payment_api, paid_session, "succeeded", delivery="never")
    deps = payment_api.deps
    # A hold near its HOLD_MAX: its session ends a second from now (HOLD_MAX - grace - age), allowed here.
    near_end = payment_api.holds.add(kit.unique_customer(), ttl=121, age=1200 - 120 - 1)
    lost = await start_checkout(StartCheckout(near_end.hold_id, near_end.customer_id, "k", None), type(deps)(
        **{**vars(deps), "settings": deps.settings.model_copy(update={"payment_min_session_seconds": 0})}))
    lost_id = str(lost.payment_id)
    open_id, _, _ = await started(payment_api, kit)
    await asyncio.sleep(1.2)
    await money.settle_pending(deps)  # RECONCILE_AFTER_SECONDS is 900: only the ended session is due
    assert await state(payment_api, lost_id) == ("EXPIRED", ["PaymentFailed"])
    assert await state(payment_api, paid_id) == ("PENDING", [])
    await money.settle_pending(type(deps)(**{**vars(deps), "settings": deps.settings.model_copy(
        update={"reconcile_after_seconds": 0})}))
    assert await state(payment_api, paid_id) == ("SUCCEEDED", ["PaymentSucceeded"])
    assert await state(payment_api, open_id) == ("PENDING", [])


async def test_booking_failed_refunds_once_at_the_gateway(payment_api, kit) -> None:
    payment_id, session_id, _ = await started(payment_api, kit)
    await sim_pay(payment_api, session_id, "succeeded")
    await post_callback(payment_api, *kit.signed(kit.callback_body(session_id, payment_id)))
    cmd = RefundFailedBooking(uuid.UUID(payment_id), "HOLD_EXPIRED")
    for _ in range(2):  # a redelivery is a no-op
        async with payment_api.service.pool.acquire() as conn, conn.transaction():
            await refund_failed_booking(cmd, PgPaymentsUnitOfWork(conn=conn))
    assert await money.issue_refunds(payment_api.deps) == 1
    assert await money.issue_refunds(payment_api.deps) == 0
    assert await state(payment_api, payment_id) == ("REFUNDED", ["PaymentSucceeded", "RefundIssued"])
    async with httpx.AsyncClient(headers=merchant_auth()) as c:
        listed = (await c.get(f"{payment_api.settings.stripe_api_base}/sim/sessions")).json()
    assert len(next(s["refundIds"] for s in listed if s["sessionId"] == session_id)) == 1


async def reason(api, payment_id):  # type: ignore[no-untyped-def]
    async with api.service.pool.acquire() as conn:
        return await conn.fetchval(
            "SELECT convert_from(payload, 'UTF8')::jsonb->'data'->>'reason' FROM outbox "
            "WHERE convert_from(payload, 'UTF8')::jsonb->'data'->>'paymentId' = $1 "
            "AND convert_from(payload, 'UTF8')::jsonb->>'type' = 'PaymentFailed'", payment_id)


async def send(api, kit, session_id, payment_id, kind):  # type: ignore[no-untyped-def]
    r = await post_callback(api, *kit.signed(kit.callback_body(session_id, payment_id, kind)))
    assert r.status_code == 200, r.text
    return r.json()["outcome"]


async def test_r21_completed_unpaid_waits_for_the_async_events(payment_api, kit) -> None:
    """A bank debit: checkout.session.completed with payment_status unpaid changes nothing; the async
    events settle it (succeeded books, failed declines)."""
    ok_id, ok_session, _ = await started(payment_api, kit)
    no_id, no_session, _ = await started(payment_api, kit)
    for session in (ok_session, no_session):
        await sim_pay(payment_api, session, "processing")
    assert await send(payment_api, kit, ok_session, ok_id, "checkout.session.completed") == "pending"
    assert await state(payment_api, ok_id) == ("PENDING", [])
    await sim_pay(payment_api, ok_session, "succeeded")
    assert await send(payment_api, kit, ok_session, ok_id, "checkout.session.async_payment_succeeded") == "applied"
    assert await state(payment_api, ok_id) == ("SUCCEEDED", ["PaymentSucceeded"])
    async with payment_api.service.pool.acquire() as conn:  # the money events say which currency (CURRENCY here)
        currencies = await conn.fetch("SELECT convert_from(payload, 'UTF8')::jsonb->'data'->>'currency' AS c "
                                      "FROM outbox WHERE convert_from(payload, 'UTF8')::jsonb->'data'->>'paymentId' "
                                      "= $1", ok_id)
    assert [r["c"] for r in currencies] == ["EUR", "EUR"]  # CheckoutStarted, PaymentSucceeded
    async with httpx.AsyncClient(headers=merchant_auth()) as c:  # and Stripe charged in it
        at_stripe = await c.get(f"{payment_api.settings.stripe_api_base}/v1/checkout/sessions/{ok_session}")
    assert at_stripe.json()["currency"] == "eur"
    await sim_pay(payment_api, no_session, "failed")
    assert await send(payment_api, kit, no_session, no_id, "checkout.session.async_payment_failed") == "applied"
    assert await state(payment_api, no_id) == ("FAILED", ["PaymentFailed"])
    assert await reason(payment_api, no_id) == "DECLINED"


async def test_r21_expired_event_expires_the_payment_and_a_late_pay_is_refused(payment_api, kit) -> None:
    payment_id, session_id, _ = await started(payment_api, kit)
    async with httpx.AsyncClient(headers=merchant_auth()) as c:
        r = await c.post(f"{payment_api.settings.stripe_api_base}/v1/checkout/sessions/{session_id}/expire")
        assert r.status_code == 200 and r.json()["status"] == "expired"
        late = await c.post(f"{payment_api.settings.stripe_api_base}/sim/sessions/{session_id}/pay",
                            json={"outcome": "succeeded", "delivery": "never"})
        assert late.status_code == 409  # the customer on the page after we expired it: Stripe takes nothing
    assert await send(payment_api, kit, session_id, payment_id, "checkout.session.expired") == "applied"
    assert await state(payment_api, payment_id) == ("EXPIRED", ["PaymentFailed"])
    assert await reason(payment_api, payment_id) == "EXPIRED"


async def test_r21_a_refund_event_confirms_a_refund_whose_answer_was_lost_once(payment_api, kit) -> None:
    """The refund call reached Stripe but its answer did not reach us: refund.updated (or charge.refunded)
    makes the payment REFUNDED with one RefundIssued; other events of it, repeats and the next refund pass add
    nothing."""
    payment_id, session_id, _ = await started(payment_api, kit)
    await sim_pay(payment_api, session_id)
    await send(payment_api, kit, session_id, payment_id, "checkout.session.completed")
    async with payment_api.service.pool.acquire() as conn, conn.transaction():
        await refund_failed_booking(RefundFailedBooking(uuid.UUID(payment_id), "HOLD_EXPIRED"),
                                    PgPaymentsUnitOfWork(conn=conn))
    refund_id = await payment_api.deps.gateway.refund(session_id, uuid.UUID(payment_id), 2400)  # answer "lost"
    refund = {"id": refund_id, "object": "refund", "status": "succeeded", "metadata": {"paymentId": payment_id}}
    events = [{"id": f"evt_{uuid.uuid4().hex}", "object": "event", "type": kind, "created": 0, "data": {"object": obj}}
              for kind, obj in (("refund.updated", refund), ("charge.refunded", {
                  "id": "ch_1", "object": "charge", "refunded": True, "metadata": {"paymentId": payment_id},
                  "refunds": {"object": "list", "data": [refund]}}))]
    outcomes = [(await post_callback(payment_api, *kit.signed(e))).json()["outcome"] for e in (*events, events[0])]
    # The simulator sends its own charge.refunded too, at the same time: whichever comes first applies it.
    assert outcomes[:2] in (["applied", "unknown"], ["unknown", "unknown"]) and outcomes[2] == "duplicate"
    assert await money.issue_refunds(payment_api.deps) == 0
    assert await state(payment_api, payment_id) == ("REFUNDED", ["PaymentSucceeded", "RefundIssued"])


async def test_r21_other_event_types_are_acknowledged_and_change_nothing(payment_api, kit) -> None:
    payment_id, session_id, _ = await started(payment_api, kit)
    await sim_pay(payment_api, session_id)
    body = {**kit.callback_body(session_id, payment_id), "type": "payment_intent.created"}
    r = await post_callback(payment_api, *kit.signed(body))
    assert (r.status_code, r.json()["outcome"]) == (200, "ignored")
    assert await state(payment_api, payment_id) == ("PENDING", [])
    async with payment_api.service.pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM gateway_event WHERE event_id = $1", body["id"]) == 0
