"""R16 and R20 (docs/reliability.md): cluster mode under faults. `make test` runs it beside the main suite
(background.sh).

The cluster of deploy/local/cluster.sh (three Kafka brokers, topics with replication factor 3 and min ISR 2,
a Redis Cluster of three masters with a replica each, PostgreSQL as a Patroni cluster of three nodes in
synchronous mode behind an HAProxy following the primary, every API twice behind HAProxy, every worker role
twice), on ports and a database of its own. Random journeys (R14, tests/e2e/journeys.py) and a steady hold
load go through the balancer while, in turn, the broker leading most booking-events partitions, a Redis
master, one hold-service API instance and hold-service's relay leader are killed with SIGKILL, a
payment-service worker is stopped (SIGSTOP) past its consumer session, and the PostgreSQL primary is killed
(SIGKILL of its postmaster: Patroni promotes the synchronous standby, the old primary rejoins as a standby);
each is brought back. Then the saga checker (tests/e2e/saga): every invariant, 0 events lost, duplicates
absorbed, no 5xx but 503; and payment-service extended its checkouts' holds at hold-service's internal door
(hold-api-internal, two instances behind a front door of their own), never at the customers' (the access logs).
Printed: the checker's report, the failover's figures (promotion, rejoin, kill to
the first hold granted after it, the answers meanwhile) and, per 5 s window, the answers, the calls without
one and the p99, with the fault under way.

    .venv/bin/pytest -p no:cacheprovider deploy/tests/test_cluster_faults.py -q -s

Size (environment): CLUSTER_FAULT_SECONDS (150) of journeys and load, CLUSTER_FAULT_CUSTOMERS (12),
CLUSTER_FAULT_RATE (8 holds/s of steady load). Logs and the history: var/cluster-faults/.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_run import Cluster, until
from deploy_support import DOTENV, REPO
from fault_windows import faults, render, steady_holds, windows
from hold_service.adapters.seat_gate import seat_key
from money_path import extensions
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from ticketing.auth import issue_token
from ticketing.events import BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ
from ticketing_testing import TEST_DATABASE
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

from tests.e2e.customers import KEEPALIVE_EXPIRY, Customer, Shop
from tests.e2e.journeys import shopper
from tests.e2e.saga import Scope, Sources, check
from tests.e2e.saga.history import History
from tests.e2e.saga.offsets import KafkaView
from tests.e2e.saga.scope import consumer_groups
from tests.e2e.saga_run import RunConfig, open_wave

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.reliability]

SECONDS = float(os.environ.get("CLUSTER_FAULT_SECONDS", "150"))
CUSTOMERS = int(os.environ.get("CLUSTER_FAULT_CUSTOMERS", "12"))
RATE = float(os.environ.get("CLUSTER_FAULT_RATE", "8"))
HOLD_TTL, HOLD_MAX, CONFIRM_GRACE = 12, 40, 15
# As the e2e saga run: holds expire, sessions lapse and reconciliation settles many times within the run; a
# checkout extends its hold to its session's end + the grace, never past HOLD_MAX after the hold was taken.
SETTINGS = {"APP_ENV": "test", "HOLD_TTL_SECONDS": str(HOLD_TTL), "PAYMENT_SESSION_TTL_SECONDS": "12",
            "HOLD_MAX_SECONDS": str(HOLD_MAX), "PAYMENT_CONFIRM_GRACE_SECONDS": str(CONFIRM_GRACE),
            "PAYMENT_MIN_SESSION_SECONDS": "3",
            "SWEEP_INTERVAL_SECONDS": "1", "RECONCILE_AFTER_SECONDS": "4", "RECONCILE_INTERVAL_SECONDS": "1",
            "VOUCHER_RESERVATION_TTL_SECONDS": "20", "SENDER_INTERVAL_SECONDS": "0.5",
            "CALLBACK_BACKOFF_INITIAL": "0.2", **UNLIMITED_HOLDS}
STOP_SECONDS = 10.0  # the consumers' session timeout is 6 s (ticketing.consumer)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster(REPO / "var" / "cluster-faults", 7300, f"{TEST_DATABASE}_cluster", SETTINGS)
    started = time.monotonic()
    try:
        c.up()
        print(f"\ncluster up in {time.monotonic() - started:.0f} s")
        yield c
    finally:
        c.sh("down")


async def nemesis(c: Cluster, history: History, hot_key: str, t0: float) -> None:
    async def at(fraction: float) -> None:
        await asyncio.sleep(max(0.0, t0 + fraction * SECONDS - time.monotonic()))

    await at(0.10)
    broker, leads = await c.busiest_leader(BOOKING_EVENTS)
    history.nemesis("kill_broker", "invoke", broker=broker, leads=leads)
    await asyncio.to_thread(c.sh, "kafka-kill", str(broker))
    await asyncio.sleep(8)
    await asyncio.to_thread(c.sh, "kafka-start", str(broker))

    async def replicas_in_sync() -> bool:
        return await c.in_sync(BOOKING_EVENTS)
    await until(replicas_in_sync, 120)
    history.nemesis("kill_broker", "ok", broker=broker)

    await at(0.28)
    master = c.redis_master_of(hot_key)
    history.nemesis("kill_redis_master", "invoke", port=master)
    await asyncio.to_thread(c.redis.kill, master)
    promoted = await asyncio.to_thread(c.redis.wait_failover, hot_key, master)
    await asyncio.to_thread(c.redis.restart, master)  # back as the promoted one's replica
    await asyncio.to_thread(c.redis.settle)
    history.nemesis("kill_redis_master", "ok", port=master, promoted=promoted)

    await at(0.46)
    history.nemesis("kill_api", "invoke", program="hold-api-1")
    killed = c.kill("hold-api-1")
    await asyncio.to_thread(c.wait_running, "hold-api-1", killed)

    async def both_balanced() -> bool:
        return c.balanced("hold-api") == 2
    await until(both_balanced, 120)
    history.nemesis("kill_api", "ok", program="hold-api-1")

    await at(0.62)
    leader = await c.relay_leader("hold")
    history.nemesis("kill_relay_leader", "invoke", program=leader)
    killed = c.kill(leader)
    await asyncio.to_thread(c.wait_running, leader, killed)
    history.nemesis("kill_relay_leader", "ok", program=leader, taken_over_by=await c.relay_leader("hold"))

    await at(0.78)
    pid = c.pid("payment-worker-1")
    history.nemesis("stop_consumer", "invoke", program="payment-worker-1", seconds=STOP_SECONDS)
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(STOP_SECONDS)
    finally:
        os.kill(pid, signal.SIGCONT)
    history.nemesis("stop_consumer", "ok", program="payment-worker-1")

    await at(0.88)  # R20: the database's primary lost
    history.nemesis("kill_pg_primary", "invoke")
    old, new, promoted, rejoined = await asyncio.to_thread(c.pg_failover)
    history.nemesis("kill_pg_primary", "ok", killed=old, promoted=new, promoted_after_s=round(promoted, 2),
                    rejoined_after_s=round(rejoined, 2))


def failover_window(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """From the primary's kill: the time to the first hold answered 201 that was asked after it, and the answers
    the callers got from the kill to the old primary's rejoin, by kind."""
    kill, done = (next(op for op in ops if op["process"] == "nemesis" and op["f"] == "kill_pg_primary"
                       and op["type"] == kind) for kind in ("invoke", "ok"))
    answered = [op for op in ops if op["process"] != "nemesis" and op["type"] != "invoke"]
    first = min((op["time"] for op in answered if op["f"] == "hold" and op.get("status") == 201
                 and op["time"] - op.get("latency", 0.0) >= kill["time"]), default=None)
    during = [op.get("status") for op in answered if kill["time"] <= op["time"] <= done["time"]]
    return {**done["value"], "first_201_after_s": round(first - kill["time"], 2) if first is not None else None,
            "answers_until_rejoined": len(during), "503s": sum(s == 503 for s in during),
            "5xx_not_503": sum((s or 0) >= 500 and s != 503 for s in during), "no_answer": during.count(None)}


async def test_r16_cluster_faults_lose_nothing_and_break_no_invariant(cluster: Cluster) -> None:
    url = {"hold": cluster.address["HOLD_URL"], "pay": cluster.address["PAYMENT_URL"],
           "voucher": cluster.address["VOUCHER_URL"], "sim": cluster.address["GATEWAY_URL"]}
    secret, dsn = DOTENV["JWT_SECRET"], cluster.dsn()
    cfg = RunConfig(seed=16, customers=CUSTOMERS, seconds=SECONDS, showtimes=3, seats=16)
    async with KafkaView(cluster.bootstrap) as kafka:
        start = {t: await kafka.end_offsets(t) for t in (BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ)}
    first = 10**11 + uuid.uuid4().int % 10**11
    customers = [first + i for i in range(cfg.customers)]
    known = {c for i, c in enumerate(customers) if i % 3 != 0}
    await upsert_all(dsn["notifier"], [Contact(c, f"c{c}@example.com", f"Cluster {c}") for c in sorted(known)])
    admin = {"Authorization": f"Bearer {issue_token(secret, sub='1', role='admin')}"}
    history, since = History(), time.strftime("%Y-%m-%d %H:%M:%S")  # as the programs' logs write time
    tag, base = uuid.uuid4().hex[:6].upper(), (10**9 + uuid.uuid4().int % 10**9) * 1000
    load_showtime = base + 99
    limits = httpx.Limits(max_connections=200, keepalive_expiry=KEEPALIVE_EXPIRY)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        r = await client.post(f"{url['hold']}/admin/showtimes", headers=admin, json={
            "showtimeId": load_showtime, "title": "steady load", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": 1200, "rows": {"A": 20, "B": 20, "C": 20, "D": 20, "E": 20}})
        assert r.status_code == 201, r.text
        shop = Shop(url=url, client=client, history=history, jwt_secret=secret, hold_ttl=HOLD_TTL)
        shop.open_wave = lambda: open_wave(shop, admin, tag, base, len(shop.waves), cfg)
        await shop.open_wave()
        t0 = time.monotonic()
        shoppers = [shopper(Customer(shop, i, c, cfg.seed), lambda: time.monotonic() >= t0 + SECONDS)
                    for i, c in enumerate(customers)]
        load_customers = [first + 10**6 + n for n in range(500)]
        tokens = [issue_token(secret, sub=str(c), role="customer", ttl_seconds=86400) for c in load_customers]
        seats = [f"{row}{n}" for row in "ABCDE" for n in range(1, 21)]
        load = steady_holds(history, client, url["hold"], lambda: tokens[int(time.monotonic() * 1000) % 500],
                            load_showtime, seats, RATE, SECONDS)
        done = await asyncio.gather(nemesis(cluster, history, seat_key(load_showtime, "A1"), t0), load, *shoppers)
    logs = REPO / "var" / "cluster-faults" / "runs" / time.strftime("%Y%m%d-%H%M%S")
    history.dump(logs / "history.jsonl")
    scope = Scope(showtimes={s for w in shop.waves for s in w.showtimes} | {load_showtime},
                  vouchers={v for w in shop.waves for v in w.vouchers})
    sources = Sources(dsn=dsn, hold_url=url["hold"], sim_url=url["sim"], bootstrap=cluster.bootstrap,
                      groups=consumer_groups(""), mail_dir=Path(cluster.address["MAIL_DIR"]), start_offsets=start,
                      jwt_secret=secret, hold_max_seconds=HOLD_MAX, confirm_grace_seconds=CONFIRM_GRACE)
    verdict = await check(scope, sources, history, rest_timeout=120)
    table = windows(history.ops)
    verdict.extra = {"journeys": sum(done[2:]), "steady_holds_sent": done[1],
                     "faults": [{"what": w, "from_s": round(a, 1), "back_after_s": round(b - a, 1)}
                                for a, b, w in faults(history.ops)],
                     "failover": failover_window(history.ops),
                     # payment-service's checkouts extend their holds at hold-service's internal door only
                     "hold_extensions": {door: sum(extensions(f"{door}-{i}", since, Path(cluster.address["LOG_DIR"]))
                                                   for i in (1, 2)) for door in ("hold-api-internal", "hold-api")}}
    report = verdict.report() + "\n\nper 5 s window (calls by when they were made):\n" + render(table)
    (logs / "report.txt").write_text(verdict.report(samples=None) + "\n\n" + render(table) + "\n")
    print(report)
    assert [f for _, _, f in faults(history.ops)] and len(faults(history.ops)) == 6, "a fault was not brought back"
    assert sum(r["2xx"] for r in table[-3:]) > 0, "nothing succeeded after the faults"
    assert verdict.extra["failover"]["first_201_after_s"] is not None, "no hold granted after the failover"
    doors = verdict.extra["hold_extensions"]
    assert doors["hold-api-internal"] > 0 and doors["hold-api"] == 0, f"checkouts extended holds at {doors}"
    if verdict.violations:  # the failed invariants last, where a log's tail shows them
        pytest.fail("\n".join(f"FAIL {c.name}: {len(c.violations)} violations, e.g. {c.violations[:3]}"
                               for c in verdict.failed()), pytrace=False)
