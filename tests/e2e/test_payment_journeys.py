"""Scenarios R8-R11, R17, S1 (docs/reliability.md), BOLA on checkout and checkout crash-safety, end to end:
hold-service, payment-service, the simulator and real Kafka (tests/e2e/stack.py). Invariants are read from Postgres."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest
from ticketing.auth import issue_token
from ticketing_testing import env, eventually, free_port, merchant_auth, service_process, stripe_event, stripe_signed

from .stack import WEBHOOK_SECRET as SECRET
from .stack import Stack, Timings, start_stack

LOGS = Path(__file__).resolve().parents[2] / "var" / "log" / "tests" / "e2e-payments"
# Short, for R9, R10 and R17: a hold lasts 10 s, a payment session 6 s, and a checkout extends its hold to the
# session's end + the 8 s grace. RECONCILE_AFTER_SECONDS is long: only a session's end makes the reconciler
# settle a payment early (docs/saga.md).
HOLD_TTL, SESSION_TTL, GRACE = 10, 6, 8
TIMINGS = Timings(hold_ttl=HOLD_TTL, session_ttl=SESSION_TTL, sweep_interval=1, reconcile_after=600,
                  reconcile_interval=1, hold_max=600, confirm_grace=GRACE, min_session=2)


@dataclass
class PaymentStack:
    hold_url: str
    pay_url: str
    sim_url: str
    hold_dsn: str
    pay_dsn: str
    pay_env: dict[str, str]
    jwt_secret: str
    processes: Stack  # to pause one (SIGSTOP)


@pytest.fixture(scope="module")
def stack(migrated_dsn, kafka_bootstrap, redis_url, tmp_path_factory) -> Iterator[PaymentStack]:  # type: ignore[no-untyped-def]
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("payments-mail"), logs=LOGS, timings=TIMINGS,
                     services=("sim", "hold", "pay")) as s:
        yield PaymentStack(hold_url=s.url["hold"], pay_url=s.url["pay"], sim_url=s.url["sim"], hold_dsn=s.dsn["hold"],
                           pay_dsn=s.dsn["payment"], pay_env=s.procs["pay-api"].env, jwt_secret=s.jwt_secret,
                           processes=s)

pytestmark = pytest.mark.e2e


def auth(stack, sub: int, role: str = "customer") -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


def customer() -> int:
    return 10**11 + uuid.uuid4().int % 10**11


async def showtime(stack, c: httpx.AsyncClient, rows: dict[str, int] | None = None) -> int:  # type: ignore[no-untyped-def]
    sid = 10**9 + uuid.uuid4().int % 10**9
    r = await c.post(f"{stack.hold_url}/admin/showtimes", headers=auth(stack, 1, "admin"), json={
        "showtimeId": sid, "title": "e2e", "startsAt": "2031-01-01T20:00:00Z", "priceCents": 1200,
        "rows": rows or {"A": 4}})
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
    return stripe_signed(stripe_event(session_id, payment_id, kind), secret, t)


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
        raw, header = signed(session_id, p["paymentId"], "checkout.session.completed")
        sem = asyncio.Semaphore(10)

        async def send() -> httpx.Response:
            async with sem:
                return await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                                    headers={"Stripe-Signature": header, "Content-Type": "application/json"})

        responses = await asyncio.gather(*(send() for _ in range(100)))
        outcomes = [r.json()["outcome"] for r in responses]
        assert [r.status_code for r in responses] == [200] * 100
        assert outcomes.count("duplicate") == 99
        await eventually(lambda: _eq(hold_status(stack, h["holdId"]), "BOOKED"), 20)
        await asyncio.sleep(1)
        assert await count_events(stack.pay_dsn, h["bookingId"], "PaymentSucceeded") == 1
        assert await count_events(stack.hold_dsn, h["bookingId"], "BookingConfirmed") == 1


async def hold_expiry(stack, c, hold_id: str, who: int) -> datetime:  # type: ignore[no-untyped-def]
    r = await c.get(f"{stack.hold_url}/holds/{hold_id}", headers=auth(stack, who))
    return datetime.fromisoformat(r.json()["expiresAt"])


def seconds_to(when: datetime) -> float:
    return max(0.0, when.timestamp() - time.time())


async def test_r9_a_payment_applied_beyond_the_grace_is_refunded_and_the_other_customer_keeps_the_seat(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        ha = await hold(stack, c, sid, a)
        pa = (await checkout(stack, c, ha["holdId"], a)).json()
        extended = await hold_expiry(stack, c, ha["holdId"], a)  # the session's end + the grace
        assert extended == datetime.fromisoformat(pa["expiresAt"]) + timedelta(seconds=GRACE)
        # A pays in time, but hold-service's consumer is stopped until after even the extended hold expired
        # and B took the seat: the old rule stands, A is refunded.
        paused = asyncio.create_task(stack.processes.pause("hold-worker", seconds_to(extended) + 3))
        await pay(stack, c, await session_of(stack, pa["paymentId"]))
        await asyncio.sleep(seconds_to(extended) + 0.5)
        hb = await hold(stack, c, sid, b)
        await paused
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
        # Both are settled with the gateway at the first reconciliation pass after their sessions ended, long
        # before RECONCILE_AFTER_SECONDS (600 s): A expired, B paid and booked within the grace of its hold.
        await eventually(lambda: _eq(status(stack, pa["paymentId"]), "EXPIRED"), SESSION_TTL + 20)
        assert await count_events(stack.pay_dsn, ha["bookingId"], "PaymentFailed") == 1
        await eventually(lambda: _eq(hold_status(stack, hb["holdId"]), "BOOKED"), SESSION_TTL + GRACE)
        assert await status(stack, pb["paymentId"]) == "SUCCEEDED"
        assert await count_events(stack.pay_dsn, hb["bookingId"], "RefundIssued") == 0
        await eventually(lambda: _in(hold_status(stack, ha["holdId"]), ("EXPIRED", "RELEASED")), GRACE + 20)


async def _in(coro, expected) -> bool:  # type: ignore[no-untyped-def]
    return bool(await coro in expected)


PAYERS = 6


async def test_r17_paying_at_the_last_second_always_books_even_with_the_consumer_paused(stack) -> None:  # type: ignore[no-untyped-def]
    """Customers check out halfway through their holds and pay 1-2 s before their sessions end (callbacks
    normal or lost), while hold-service's consumer is stopped (SIGSTOP) for half the grace: every payment the
    gateway accepted in time is BOOKED, none refunded. Before checkouts extended their holds, a session
    ended with its hold, and the consumer applied these payments after the holds expired: all refunded."""
    async with httpx.AsyncClient(timeout=15) as c:
        sid = await showtime(stack, c, rows={"A": PAYERS})
        who = [customer() for _ in range(PAYERS)]
        holds = [await hold(stack, c, sid, w, (f"A{n + 1}",)) for n, w in enumerate(who)]
        await asyncio.sleep(HOLD_TTL / 2)  # a checkout late in the hold: its session would outlive the hold
        checkouts = await asyncio.gather(*(checkout(stack, c, h["holdId"], w, "r17")
                                           for h, w in zip(holds, who, strict=True)))
        assert [r.status_code for r in checkouts] == [201] * PAYERS, [r.text for r in checkouts]
        payments = [r.json() for r in checkouts]
        ends = [datetime.fromisoformat(p["expiresAt"]) for p in payments]
        # Each session outlives its hold's first expiry: the checkout extended the hold past it first.
        assert all(e > datetime.fromisoformat(h["expiresAt"]) for e, h in zip(ends, holds, strict=True))
        sessions = [await session_of(stack, p["paymentId"]) for p in payments]

        async def last_second(n: int) -> None:
            await asyncio.sleep(seconds_to(ends[n]) - 1 - n / PAYERS)  # 1-2 s before its session ends
            await pay(stack, c, sessions[n], delivery="never" if n % 3 == 0 else "normal")

        await asyncio.sleep(seconds_to(min(ends)) - 2.5)
        await asyncio.gather(stack.processes.pause("hold-worker", GRACE / 2), *(last_second(n) for n in range(PAYERS)))
        sims = (await c.get(f"{stack.sim_url}/sim/sessions", headers=merchant_auth())).json()
        listed = {s["sessionId"]: s for s in sims}
        for p, end in zip(payments, ends, strict=True):
            at_stripe = listed[await session_of(stack, p["paymentId"])]
            assert at_stripe["paymentStatus"] == "paid" and at_stripe["paidAt"] < end.timestamp()  # paid in time
        for h in holds:  # hold-service decided: booked, or BookingFailed (then a refund)
            await eventually(lambda h=h: decided(stack, h), 60)
        booked = [await hold_status(stack, h["holdId"]) for h in holds]
        failed = [await count_events(stack.hold_dsn, h["bookingId"], "BookingFailed") for h in holds]
        assert booked == ["BOOKED"] * PAYERS and failed == [0] * PAYERS, (booked, failed)
        await asyncio.sleep(2)  # what a refund would take (the reconciler runs every second)
        assert [await status(stack, p["paymentId"]) for p in payments] == ["SUCCEEDED"] * PAYERS
        assert [await count_events(stack.pay_dsn, h["bookingId"], "RefundIssued") for h in holds] == [0] * PAYERS


async def decided(stack, h: dict) -> bool:  # type: ignore[no-untyped-def,type-arg]
    return await hold_status(stack, h["holdId"]) == "BOOKED" or \
        await count_events(stack.hold_dsn, h["bookingId"], "BookingFailed") > 0


async def test_r11_out_of_order_callbacks_follow_the_gateway(stack) -> None:  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(timeout=15) as c:
        sid, a, b = await showtime(stack, c), customer(), customer()
        failed, completed = "checkout.session.async_payment_failed", "checkout.session.completed"
        for who, seat, outcome, order, final in ((a, "A1", "succeeded", (failed, completed), "SUCCEEDED"),
                                                 (b, "A2", "failed", (completed, failed), "FAILED")):
            h = await hold(stack, c, sid, who, (seat,))
            p = (await checkout(stack, c, h["holdId"], who)).json()
            session_id = await session_of(stack, p["paymentId"])
            await pay(stack, c, session_id, outcome, delivery="never")
            for kind in order:
                raw, header = signed(session_id, p["paymentId"], kind)
                r = await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                                 headers={"Stripe-Signature": header})
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
        completed = "checkout.session.completed"
        raw, good = signed(session_id, p["paymentId"], completed)
        bad = [None, "garbage", f"t={now}", signed(session_id, p["paymentId"], completed, "wrong")[1],
               f"t={now - 301},{good.split(',')[1]}", f"t={now + 301},{good.split(',')[1]}",
               f"t={now},v1={'0' * 64},v1={'1' * 64}"]
        for header in bad:
            r = await c.post(f"{stack.pay_url}/payments/callback", content=raw,
                             headers={"Stripe-Signature": header} if header else {})
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
    # A busy machine must not turn a slow hold-service answer into a 503 before the crash point, and the session
    # outlasts two process starts: the reconciler expires a sessionless payment once its session time is over.
    env = {**stack.pay_env, "DEPENDENCY_TIMEOUT_SECONDS": "15",
           "PAYMENT_SESSION_TTL_SECONDS": "120"}
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
    from ticketing_testing import test_dsn as on_test_database

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
        return topic == ["SeatsHeld", "HoldExtended", "CheckoutStarted", "PaymentSucceeded", "BookingConfirmed"]

    await eventually(complete, 30)
    wheres = {where for where, _ in await told()}
    assert {"hold", "payment", "hold outbox", "payment outbox"} <= wheres
