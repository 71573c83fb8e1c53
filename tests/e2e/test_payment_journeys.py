"""Scenarios R8-R11, S1 (docs/reliability.md), BOLA on checkout and checkout crash-safety, end to end: hold-service,
payment-service, the simulator and real Kafka (tests/e2e/stack.py). Invariants are read from Postgres."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import pytest
from ticketing.auth import issue_token
from ticketing.pytest_plugin import env, merchant_auth
from ticketing.testing import eventually, free_port, service_process

from .stack import WEBHOOK_SECRET as SECRET
from .stack import Timings, start_stack

LOGS = Path(__file__).resolve().parents[2] / "var" / "log" / "tests" / "e2e-payments"
HOLD_TTL, RECONCILE_AFTER = 10, 20  # short, for R9 and R10


@dataclass
class PaymentStack:
    hold_url: str
    pay_url: str
    sim_url: str
    hold_dsn: str
    pay_dsn: str
    pay_env: dict[str, str]
    jwt_secret: str


@pytest.fixture(scope="module")
def stack(migrated_dsn, kafka_bootstrap, redis_url, tmp_path_factory) -> Iterator[PaymentStack]:  # type: ignore[no-untyped-def]
    timings = Timings(hold_ttl=HOLD_TTL, sweep_interval=1, reconcile_after=RECONCILE_AFTER, reconcile_interval=1)
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("payments-mail"), logs=LOGS, timings=timings,
                     services=("sim", "hold", "pay")) as s:
        yield PaymentStack(hold_url=s.url["hold"], pay_url=s.url["pay"], sim_url=s.url["sim"], hold_dsn=s.dsn["hold"],
                           pay_dsn=s.dsn["payment"], pay_env=s.procs["pay-api"].env, jwt_secret=s.jwt_secret)

pytestmark = pytest.mark.e2e


def auth(stack, sub: int, role: str = "customer") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


def customer() -> int:
    return 10**11 + uuid.uuid4().int % 10**11


async def showtime(stack, c: httpx.AsyncClient) -> int:  # type: ignore[no-untyped-def]
    sid = 10**9 + uuid.uuid4().int % 10**9
    r = await c.post(f"{stack.hold_url}/admin/showtimes", headers=auth(stack, 1, "admin"), json={
        "showtimeId": sid, "title": "e2e", "startsAt": "2031-01-01T20:00:00Z", "priceCents": 1200,
        "rows": {"A": 4}})
    assert r.status_code == 201, r.text
    return sid


async def hold(stack, c, sid: int, who: int, seats=("A1",)) -> dict:  # type: ignore[no-untyped-def]
    r = await c.post(f"{stack.hold_url}/showtimes/{sid}/holds", headers=auth(stack, who), json={"seats": list(seats)})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def checkout(stack, c, hold_id: str, who: int, key: str = "k1") -> httpx.Response:  # type: ignore[no-untyped-def]
    return await c.post(f"{stack.pay_url}/holds/{hold_id}/checkout", json={},
                        headers={**auth(stack, who), "Idempotency-Key": key})


async def session_of(stack, payment_id: str) -> str:  # type: ignore[no-untyped-def]
    return await one(stack.pay_dsn, "SELECT session_id FROM payment WHERE payment_id = $1::uuid", payment_id)


async def one(dsn: str, sql: str, *args):  # type: ignore[no-untyped-def]
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


async def pay(stack, c, session_id: str, outcome="succeeded", delivery="normal", delay=0.0):  # type: ignore[no-untyped-def]
    r = await c.post(f"{stack.sim_url}/sim/sessions/{session_id}/pay",
                     json={"outcome": outcome, "delivery": delivery, "delaySeconds": delay})
    assert r.status_code == 200, r.text


def signed(session_id: str, payment_id: str, kind: str, secret: str = SECRET, t: int | None = None):  # type: ignore[no-untyped-def]
    raw = json.dumps({"id": f"evt_{uuid.uuid4().hex}", "type": kind, "created": int(time.time()),
                      "data": {"sessionId": session_id, "reference": payment_id, "amountCents": 1200}}).encode()
    ts = int(time.time()) if t is None else t
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + raw, hashlib.sha256).hexdigest()
    return raw, f"t={ts},v1={mac}"


async def status(stack, payment_id: str) -> str:  # type: ignore[no-untyped-def]
    return await one(stack.pay_dsn, "SELECT status FROM payment WHERE payment_id = $1::uuid", payment_id)  # type: ignore[no-any-return]


async def hold_status(stack, hold_id: str) -> str:  # type: ignore[no-untyped-def]
    return await one(stack.hold_dsn, "SELECT status FROM booking WHERE hold_id = $1::uuid", hold_id)  # type: ignore[no-any-return]


async def count_events(dsn: str, booking_id: str, kind: str) -> int:
    return await one(dsn, "SELECT count(*) FROM outbox WHERE message_key = $1 AND "  # type: ignore[no-any-return]
                     "convert_from(payload, 'UTF8')::jsonb->>'type' = $2", booking_id, kind)


async def test_happy_path_through_the_hosted_page(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, who = await showtime(stack, c), customer()
        h = await hold(stack, c, sid, who)
        r = await checkout(stack, c, h["holdId"], who)
        assert r.status_code == 201, r.text
        page = await c.get(r.json()["redirectUrl"])
        assert "Pay" in page.text
        await c.post(r.json()["redirectUrl"], content=b"action=pay",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        await eventually(lambda: _eq(hold_status(stack, h["holdId"]), "BOOKED"), 20)
        assert await status(stack, r.json()["paymentId"]) == "SUCCEEDED"


async def _eq(coro, expected) -> bool:  # type: ignore[no-untyped-def]
    return bool(await coro == expected)


async def test_r8_callback_replayed_100_times_10_at_once(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, who = await showtime(stack, c), customer()
        h = await hold(stack, c, sid, who)
        p = (await checkout(stack, c, h["holdId"], who)).json()
        session_id = await session_of(stack, p["paymentId"])
        await pay(stack, c, session_id, delivery="never")
        raw, header = signed(session_id, p["paymentId"], "payment.succeeded")
        sem = asyncio.Semaphore(10)

        async def send() -> httpx.Response:
            async with sem:
                return await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                                    headers={"Gateway-Signature": header, "Content-Type": "application/json"})

        responses = await asyncio.gather(*(send() for _ in range(100)))
        outcomes = [r.json()["outcome"] for r in responses]
        assert [r.status_code for r in responses] == [200] * 100
        assert outcomes.count("duplicate") == 99
        await eventually(lambda: _eq(hold_status(stack, h["holdId"]), "BOOKED"), 20)
        await asyncio.sleep(1)
        assert await count_events(stack.pay_dsn, h["bookingId"], "PaymentSucceeded") == 1
        assert await count_events(stack.hold_dsn, h["bookingId"], "BookingConfirmed") == 1


async def test_r9_late_payment_is_refunded_and_the_other_customer_keeps_the_seat(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        ha = await hold(stack, c, sid, a)
        pa = (await checkout(stack, c, ha["holdId"], a)).json()
        # A pays in time, but the callback arrives after the hold expired and B took the seat.
        await pay(stack, c, await session_of(stack, pa["paymentId"]), delivery="delayed", delay=HOLD_TTL + 2)
        await asyncio.sleep(HOLD_TTL + 0.3)
        hb = await hold(stack, c, sid, b)
        await eventually(lambda: _eq(status(stack, pa["paymentId"]), "REFUNDED"), 30)
        assert await hold_status(stack, hb["holdId"]) == "HELD"
        seat = await one(stack.hold_dsn, "SELECT hold_id::text FROM show_seat WHERE showtime_id = $1 "
                         "AND seat_code = 'A1'", sid)
        assert seat == hb["holdId"]
        assert await count_events(stack.pay_dsn, ha["bookingId"], "RefundIssued") == 1
        assert await hold_status(stack, ha["holdId"]) != "BOOKED"


async def test_r10_no_callback_reconciliation_resolves_it(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        ha = await hold(stack, c, sid, a, ("A1",))
        hb = await hold(stack, c, sid, b, ("A2",))
        pa = (await checkout(stack, c, ha["holdId"], a)).json()  # nobody pays: the session expires
        pb = (await checkout(stack, c, hb["holdId"], b)).json()  # paid, but no callback ever comes
        await pay(stack, c, await session_of(stack, pb["paymentId"]), delivery="never")
        await eventually(lambda: _eq(status(stack, pa["paymentId"]), "EXPIRED"), 60)
        assert await count_events(stack.pay_dsn, ha["bookingId"], "PaymentFailed") == 1
        # B's payment is found paid by reconciliation, after the hold expired: refunded, not lost.
        await eventually(lambda: _eq(status(stack, pb["paymentId"]), "REFUNDED"), 60)
        assert await hold_status(stack, ha["holdId"]) in ("EXPIRED", "RELEASED")


async def test_r11_out_of_order_callbacks_follow_the_gateway(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        for who, seat, outcome, order, final in (
                (a, "A1", "succeeded", ("payment.failed", "payment.succeeded"), "SUCCEEDED"),
                (b, "A2", "failed", ("payment.succeeded", "payment.failed"), "FAILED")):
            h = await hold(stack, c, sid, who, (seat,))
            p = (await checkout(stack, c, h["holdId"], who)).json()
            session_id = await session_of(stack, p["paymentId"])
            await pay(stack, c, session_id, outcome, delivery="never")
            for kind in order:
                raw, header = signed(session_id, p["paymentId"], kind)
                r = await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                                 headers={"Gateway-Signature": header})
                assert r.status_code == 200
            assert await status(stack, p["paymentId"]) == final
        await eventually(lambda: _eq(hold_status(stack, h["holdId"]), "HELD"), 5)


async def test_s1_bad_signatures_are_401_and_change_nothing(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, who = await showtime(stack, c), customer()
        h = await hold(stack, c, sid, who)
        p = (await checkout(stack, c, h["holdId"], who)).json()
        session_id = await session_of(stack, p["paymentId"])
        await pay(stack, c, session_id, delivery="never")
        now = int(time.time())
        raw, good = signed(session_id, p["paymentId"], "payment.succeeded")
        bad = [None, "garbage", f"t={now}", signed(session_id, p["paymentId"], "payment.succeeded", "wrong")[1],
               f"t={now - 301},{good.split(',')[1]}", f"t={now + 301},{good.split(',')[1]}",
               f"t={now},v1={'0' * 64},v1={'1' * 64}"]
        for header in bad:
            r = await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                             headers={"Gateway-Signature": header} if header else {})
            assert r.status_code == 401, header
        assert await status(stack, p["paymentId"]) == "PENDING"
        assert await one(stack.pay_dsn, "SELECT count(*) FROM gateway_event WHERE session_id = $1", session_id) == 0


async def test_s2_checkout_of_another_customers_hold_is_404(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        h = await hold(stack, c, sid, a)
        r = await checkout(stack, c, h["holdId"], b)
        assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"
        assert await one(stack.pay_dsn, "SELECT count(*) FROM payment WHERE hold_id = $1::uuid", h["holdId"]) == 0


async def test_checkout_crash_between_gateway_and_database_yields_one_session(stack) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # A busy machine must not turn a slow hold-service answer into a 503 before the crash point.
    env = {**stack.pay_env, "PUBLIC_CALLBACK_URL": f"{url}/payments/callback", "DEPENDENCY_TIMEOUT_SECONDS": "15"}
    args = ["-m", "uvicorn", "--factory", "payment_service.entrypoints.api.app:get_application",
            "--host", "127.0.0.1", "--port", str(port)]
    crashing = ["-m", "uvicorn", "--app-dir", str(Path(__file__).parent), "--factory",
                "crashing_gateway:get_application", "--host", "127.0.0.1", "--port", str(port)]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, who = await showtime(stack, c), customer()
        h = await hold(stack, c, sid, who)
        # Two process starts take longer than the stack's short hold TTL on a busy machine: this hold lasts.
        for sql in ("UPDATE booking SET expires_at = now() + interval '10 minutes' WHERE hold_id = $1::uuid",
                    "UPDATE show_seat SET hold_expires_at = now() + interval '10 minutes' WHERE hold_id = $1::uuid"):
            await one(stack.hold_dsn, sql, h["holdId"])
        h = (await c.get(f"{stack.hold_url}/holds/{h['holdId']}", headers=auth(stack, who))).json()
        before = time.time()
        with service_process(crashing, env, ready_url=f"{url}/healthz",
                             log_path=LOGS / "pay-api-crash.log") as proc:
            with pytest.raises(httpx.HTTPError):
                await c.post(f"{url}/holds/{h['holdId']}/checkout", json={},
                             headers={**auth(stack, who), "Idempotency-Key": "crash"})
            assert proc.wait(10) == 87
        assert await one(stack.pay_dsn, "SELECT session_id FROM payment WHERE hold_id = $1::uuid",
                         h["holdId"]) is None  # the gateway knows the session, our database does not
        with service_process(args, env, ready_url=f"{url}/healthz", log_path=LOGS / "pay-api-restart.log"):
            r = await c.post(f"{url}/holds/{h['holdId']}/checkout", json={},
                             headers={**auth(stack, who), "Idempotency-Key": "crash"})
        assert r.status_code == 201, r.text
        sessions = [s for s in (await c.get(f"{stack.sim_url}/sim/sessions", headers=merchant_auth())).json()
                    if s["created"] >= before]
        assert [s["reference"] for s in sessions] == [r.json()["paymentId"]]
        assert await session_of(stack, r.json()["paymentId"]) == sessions[0]["sessionId"]
        assert await count_events(stack.pay_dsn, h["bookingId"], "CheckoutStarted") == 1
        assert datetime.fromisoformat(r.json()["expiresAt"]) <= datetime.fromisoformat(h["expiresAt"]).astimezone(UTC)


async def test_the_story_of_a_booking_across_the_schemas_and_the_topic(stack, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`ticketing booking <id>`: the hold, the payment and every event on the topic, in time order."""
    from ticketing.cli.booking import story
    from ticketing.testing import test_dsn as on_test_database

    async with httpx.AsyncClient(timeout=15) as c:
        sid, who = await showtime(stack, c), customer()
        h = await hold(stack, c, sid, who)
        p = (await checkout(stack, c, h["holdId"], who)).json()
        await pay(stack, c, await session_of(stack, p["paymentId"]))
        await eventually(lambda: _eq(hold_status(stack, h["holdId"]), "BOOKED"), 30)
    monkeypatch.setenv("HOLD_DATABASE_URL", stack.hold_dsn)
    monkeypatch.setenv("PAYMENT_DATABASE_URL", stack.pay_dsn)
    for name in ("VOUCHER_DATABASE_URL", "NOTIFIER_DATABASE_URL"):
        monkeypatch.setenv(name, on_test_database(env(name)))
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", stack.pay_env["KAFKA_BOOTSTRAP_SERVERS"])

    async def told() -> list[tuple[str, str]]:
        lines = await story(uuid.UUID(h["bookingId"]))
        return [(where, what.split()[0]) for _, where, what in lines]

    async def complete() -> bool:
        topic = [what for where, what in await told() if where.startswith("topic@")]
        return topic == ["SeatsHeld", "CheckoutStarted", "PaymentSucceeded", "BookingConfirmed"]

    await eventually(complete, 30)
    wheres = {where for where, _ in await told()}
    assert {"hold", "payment", "hold outbox", "payment outbox"} <= wheres
