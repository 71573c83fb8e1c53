"""R19 (docs/reliability.md): an operator cancels a sold-out showtime while customers still hold and pay, and the
gateway refuses the first refunds. Every service runs as a real process (stack.py); the saga checker (saga/,
with its cancellation rules) then judges the showtime's bookings, payments, vouchers and e-mails.

    .venv/bin/pytest -p no:cacheprovider tests/e2e/test_showtime_cancellation.py -q -s
    R19_CUSTOMERS=150 .venv/bin/pytest ...   # 300 seats, as the scenario's table says (default: 60 seats)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from ticketing.auth import issue_token
from ticketing.events import BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ
from ticketing_testing import env, merchant_auth

from .customers import KEEPALIVE_EXPIRY, Catalogue, Customer, Shop
from .saga import Sources, check
from .saga.history import History, Journey
from .saga.offsets import KafkaView
from .saga.scope import Scope
from .stack import Stack, Timings, start_stack

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LOGS = Path(__file__).resolve().parents[2] / "var" / "log" / "tests" / "e2e-r19"
TIMINGS = Timings(hold_ttl=60, session_ttl=60, sweep_interval=1, reconcile_after=4, reconcile_interval=1,
                  voucher_ttl=60, voucher_sweep_interval=1, hold_max=120, confirm_grace=30, min_session=3)
SEATS_PER_CUSTOMER = 2
REFUSED_REFUNDS = 7


@pytest.fixture(scope="module")
def r19_stack(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = LOGS / time.strftime("%Y%m%d-%H%M%S")
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("r19-mail"), logs=logs, timings=TIMINGS) as stack:
        yield stack


async def _hold_and_check_out(c: Customer, j: Journey, sid: int, seats: list[str],
                              voucher: str | None) -> dict[str, Any] | None:
    j.showtime = sid
    r = await c.call(j, "hold", "POST", f"{c.shop.url['hold']}/showtimes/{sid}/holds",
                     value={"showtime": sid, "seats": seats}, json={"seats": seats})
    assert r is not None and r.status_code == 201, None if r is None else r.text
    j.hold_id, j.booking_id = r.json()["holdId"], r.json()["bookingId"]
    return await c.checkout(j, voucher, fallback=False)


async def _paid(c: Customer, j: Journey, checkout: dict[str, Any]) -> None:
    r = await c.pay_sim(j, checkout)
    assert r is not None and r.status_code == 200, None if r is None else r.text
    assert await c.await_payment(j, checkout["paymentId"], {"SUCCEEDED"}, timeout=60) == "SUCCEEDED"


async def test_r19_a_sold_out_showtime_cancelled_while_customers_hold_and_pay(r19_stack: Stack) -> None:
    stack, customers = r19_stack, int(env("R19_CUSTOMERS", "30"))
    async with KafkaView(stack.bootstrap) as kafka:
        start = {t: await kafka.end_offsets(t) for t in (BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ)}
    sid = 10**12 + uuid.uuid4().int % 10**12
    first = 10**11 + uuid.uuid4().int % 10**11
    ids = [first + i for i in range(customers)]
    await upsert_all(stack.dsn["notifier"], [Contact(c, f"c{c}@example.com", f"R19 {c}") for c in ids])
    admin = {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub='1', role='admin')}"}
    history = History()
    seats = customers * SEATS_PER_CUSTOMER
    limits = httpx.Limits(max_connections=customers * 2, keepalive_expiry=KEEPALIVE_EXPIRY)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        r = await client.post(f"{stack.url['hold']}/admin/showtimes", headers=admin, json={
            "showtimeId": sid, "title": "R19", "startsAt": "2031-06-01T20:00:00Z", "cinema": "R19", "hall": "1",
            "timeZone": "Europe/Madrid", "layout": [{"row": "A", "blocks": [{"from": 1, "to": seats}]}],
            "prices": {"STANDARD": {"ADULT": 1200}}})
        assert r.status_code == 201, r.text
        now = datetime.now(UTC)
        voucher = {"code": f"R19{sid}", "discountAmount": 300, "minOrderAmount": 0, "totalLimit": customers,
                   "perUserLimit": 1, "startsAt": (now - timedelta(hours=1)).isoformat(),
                   "endsAt": (now + timedelta(days=1)).isoformat(), "flashSale": False}
        r = await client.post(f"{stack.url['voucher']}/admin/vouchers", headers=admin, json=voucher)
        assert r.status_code == 201, r.text
        shop = Shop(url=stack.url, client=client, history=history, jwt_secret=stack.jwt_secret,
                    hold_ttl=TIMINGS.hold_ttl, wave=Catalogue(showtimes={sid: [f"A{n}" for n in range(1, seats + 1)]}))
        people = [Customer(shop, i, c, seed=19) for i, c in enumerate(ids)]
        journeys = [history.journey(c.id, "r19") for c in people]
        checkouts = await asyncio.gather(*(
            _hold_and_check_out(c, j, sid, [f"A{SEATS_PER_CUSTOMER * i + k}" for k in range(1, SEATS_PER_CUSTOMER + 1)],
                                voucher["code"] if i % 3 == 0 else None)  # a third with a voucher use to give back
            for i, (c, j) in enumerate(zip(people, journeys, strict=True))))
        assert all(checkouts), "every customer checked out"  # the showtime is sold out: every seat held
        early = customers * 2 // 3  # these paid before the cancellation; the others are paying or holding
        await asyncio.gather(*(_paid(c, j, co) for c, j, co in zip(people[:early], journeys, checkouts, strict=False)))
        async with httpx.AsyncClient(timeout=60) as control:  # a connection of its own, not one the pool kept idle
            refused = await control.post(f"{stack.url['sim']}/sim/refunds/refuse", headers=merchant_auth(),
                                         json={"count": REFUSED_REFUNDS})
        assert refused.status_code == 200, refused.text
        late = list(zip(people[early:], journeys[early:], checkouts[early:], strict=True))
        paying = [c.pay_sim(j, co) for c, j, co in late[::2]]  # half pay at the moment of the cancellation
        cancel = client.post(f"{stack.url['hold']}/admin/showtimes/{sid}/cancel", headers=admin,
                             json={"reason": "projector failure"})
        answers = await asyncio.gather(cancel, *paying)
        assert answers[0].status_code == 202, answers[0].text
        # A payment the gateway took after the cancellation cannot book: it is refunded (BookingFailed); one
        # that booked just before is cancelled with the others. The operator's repeat finishes either way.
        await asyncio.sleep(2)
        again = await client.post(f"{stack.url['hold']}/admin/showtimes/{sid}/cancel", headers=admin,
                                  json={"reason": "projector failure"})
        assert again.status_code == 202
    scope = Scope(showtimes={sid}, vouchers={voucher["code"]})
    sources = Sources(dsn=stack.dsn, hold_url=stack.url["hold"], sim_url=stack.url["sim"], bootstrap=stack.bootstrap,
                      groups=stack.consumer_groups(), group_prefix=stack.group_prefix, mail_dir=stack.mail_dir,
                      start_offsets=start, sent_log=stack.procs["notifier-worker"].log_path,
                      jwt_secret=stack.jwt_secret, hold_max_seconds=TIMINGS.hold_max,
                      confirm_grace_seconds=TIMINGS.confirm_grace)
    verdict = await check(scope, sources, history, rest_timeout=180)
    logs = stack.procs["notifier-worker"].log_path.parent
    history.dump(logs / "history.jsonl")
    (logs / "report.txt").write_text(verdict.report(samples=None) + "\n")
    print(verdict.report())
    names = {c.name for c in verdict.checks}
    assert {"cancel.refunded_once", "cancel.voucher_released", "cancel.showtime_closed",
            "mail.one_cancellation"} <= names, names
    failed = ", ".join(f"{c.name} ({len(c.violations)})" for c in verdict.failed())
    assert not verdict.violations, f"violated: {failed}\n{verdict.report()}"
    await _every_paid_booking_refunded_once(stack, sid, early)
    refunds = stack.procs["pay-worker"].log_path.read_text()
    assert refunds.count('"action": "refund.failed"') >= REFUSED_REFUNDS  # the gateway did refuse the first ones


async def _every_paid_booking_refunded_once(stack: Stack, sid: int, paid_before: int) -> None:
    """The same facts the checker judged, read directly: no payment of the showtime left PENDING or kept."""
    conn = await asyncpg.connect(stack.dsn["payment"])
    try:
        rows = await conn.fetch("SELECT status, count(*) AS n FROM payment WHERE showtime_id = $1 GROUP BY status",
                                sid)
    finally:
        await conn.close()
    by_status = {r["status"]: r["n"] for r in rows}
    assert "PENDING" not in by_status and "SUCCEEDED" not in by_status, by_status
    assert by_status.get("REFUNDED", 0) >= paid_before, by_status
