"""`make bench-checkout-rush`: a checkout's p50 / p99 before and after issue 35 (one call to hold-service instead
of two, fewer PostgreSQL round trips), while hold-service answers slowly as in a rush, interleaved in one run.

The checkout is payment-service's whole `start_checkout` on the TEST database against the Stripe-shaped simulator
(its own process), as in `make bench-checkout`. "before" is the code of BENCH_BASE (default `ac793a8`, the commit
before the change: its payment-service sources taken with `git archive`), "after" is this tree's; each round runs
in a process of its own (the two cannot be imported side by side), `BENCH_ROUNDS` (5) rounds alternating the order
of the variants so the shared machine's changing speed falls on all alike, each round `BENCH_CHECKOUTS` (100)
checkouts `BENCH_CONCURRENCY` (8) at a time after 8 of warm-up. hold-service is a stand-in in the round's process
that answers each call after `BENCH_HOLD_WAIT_MS` (0, 250 by default: each value its own variant): the time a
call waits behind a flood of holds in a rush (issue 35's profile; a real flood is not reproduced here). The
stand-in answers both versions' calls (a GET and an extension before, one extension answering the hold after).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
CHECKOUTS = int(os.environ.get("BENCH_CHECKOUTS", "100"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "8"))
WAITS = [int(w) for w in os.environ.get("BENCH_HOLD_WAIT_MS", "0,250").split(",")]
BASE = os.environ.get("BENCH_BASE", "ac793a8")


class SlowHolds:
    """hold-service in a rush: every call answered after `wait` seconds, by hold-service's rules (HELD and
    live, max(current, until), capped at the creation + 1200 s). Answers the calls of both versions."""

    def __init__(self, wait: float) -> None:
        self.wait, self.holds, self.calls = wait, {}, 0  # type: ignore[var-annotated]

    def add(self, hold: Any) -> None:
        self.holds[hold.hold_id] = hold

    async def get(self, hold_id: uuid.UUID) -> Any:
        await self._queue()
        return self.holds.get(hold_id)

    async def keep(self, hold_id: uuid.UUID, customer_id: int, until: datetime) -> Any:
        await self._queue()
        hold = self.holds[hold_id]
        expires = min(max(hold.expires_at, until), hold.created_at + timedelta(seconds=1200))
        self.holds[hold_id] = hold = replace(hold, expires_at=expires)
        return hold

    async def extend(self, hold_id: uuid.UUID, customer_id: int, until: datetime) -> datetime:
        return (await self.keep(hold_id, customer_id, until)).expires_at

    async def _queue(self) -> None:
        self.calls += 1
        await asyncio.sleep(self.wait)


async def one_round(sim_url: str, dsn: str, wait_ms: int, key: str) -> dict[str, Any]:
    """In a process of its own: CHECKOUTS checkouts of the payment-service on the path (before or after)."""
    from payment_service.bootstrap import bootstrap
    from payment_service.config import Settings
    from payment_service.domain.commands import StartCheckout
    from payment_service.domain.model import Hold
    from payment_service.service_layer.checkout import start_checkout

    settings = Settings(database_url=dsn, stripe_api_base=sim_url, db_pool_max=CONCURRENCY + 2,
                        stripe_api_key=os.environ["BENCH_STRIPE_KEY"])
    holds = SlowHolds(wait_ms / 1000)
    service = await bootstrap(settings, holds=holds)  # type: ignore[arg-type]
    gate = asyncio.Semaphore(CONCURRENCY)
    times: list[float] = []

    async def checkout(n: int, counted: bool) -> None:
        customer = 10**11 + uuid.uuid4().int % 10**11
        now = datetime.now().astimezone()
        hold = Hold(hold_id=uuid.uuid4(), booking_id=uuid.uuid4(), customer_id=customer, showtime_id=900_001,
                    status="HELD", expires_at=now + timedelta(seconds=600), amount_cents=2400, created_at=now)
        holds.add(hold)
        async with gate:
            started = time.perf_counter()
            await start_checkout(StartCheckout(hold.hold_id, customer, f"{key}{n}", None), service.deps)
            if counted:
                times.append((time.perf_counter() - started) * 1000)

    try:
        await asyncio.gather(*(checkout(-n - 1, False) for n in range(CONCURRENCY)))  # warm-up: the pool
        calls = holds.calls
        await asyncio.gather(*(checkout(n, True) for n in range(CHECKOUTS)))
    finally:
        await service.close()
    return {"times": times, "hold_calls_per_checkout": (holds.calls - calls) / CHECKOUTS}


def base_sources() -> Path:
    """BENCH_BASE's payment-service sources, in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="bench-checkout-base-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASE, "services/payment-service/src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "services/payment-service/src"


def run_round(variant: str, wait_ms: int, sim_url: str, dsn: str, key: str, base: Path) -> dict[str, Any]:
    env = {**os.environ, "BENCH_SIM_URL": sim_url, "BENCH_DSN": dsn, "BENCH_WAIT_MS": str(wait_ms), "BENCH_KEY": key}
    if variant == "before":
        env["PYTHONPATH"] = os.pathsep.join([str(base), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, __file__, "--round"], env=env, check=True, capture_output=True, cwd=ROOT)
    return dict(json.loads(out.stdout.decode().strip().splitlines()[-1]))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_checkout import KEY, MIGRATIONS, clean_up, pct
    from results import Results, load_average
    from ticketing_testing import (
        apply_migrations,
        free_port,
        merchant_auth,
        service_process,
        shared_migrations,
        test_dsn,
    )
    from ticketing_testing import env as setting

    dsn = test_dsn(setting("PAYMENT_DATABASE_URL"))
    apply_migrations(dsn, shared_migrations(), MIGRATIONS)
    base, port = base_sources(), free_port()
    os.environ["BENCH_STRIPE_KEY"] = merchant_auth()["Authorization"].split(" ", 1)[1]
    sim = {"GATEWAY_SIMULATOR_PORT": str(port), "GATEWAY_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "SIM_WEBHOOK_URL": "http://127.0.0.1:9/none", "LOG_LEVEL": "WARNING", "ACCESS_LOG": "false"}
    variants = [(v, w) for w in WAITS for v in ("before", "after")]
    rounds: dict[str, list[dict[str, Any]]] = {f"{v} wait={w}ms": [] for v, w in variants}
    with Results("checkout_rush") as results, \
            service_process(["-m", "gateway_simulator"], sim, ready_url=f"http://127.0.0.1:{port}/healthz"):
        results.data.update(rounds=ROUNDS, checkouts=CHECKOUTS, concurrency=CONCURRENCY, base=BASE)
        try:
            for r in range(ROUNDS):
                for v, w in (variants if r % 2 == 0 else list(reversed(variants))):
                    got = run_round(v, w, f"http://127.0.0.1:{port}", dsn, f"{KEY}{r}-{v}-{w}-", base)
                    figures = {"p50_ms": pct(got["times"], 0.5), "p99_ms": pct(got["times"], 0.99),
                               "hold_calls": got["hold_calls_per_checkout"], "load": load_average()[0]}
                    rounds[f"{v} wait={w}ms"].append(figures)
                    print(f"round {r + 1} {v:6} wait {w:4} ms  p50 {figures['p50_ms']:8.2f} ms  p99 "
                          f"{figures['p99_ms']:8.2f} ms  hold calls {figures['hold_calls']:.1f}  load "
                          f"{figures['load']}", flush=True)
        finally:
            print(f"deleted the benchmark's {asyncio.run(clean_up(dsn))} payments", flush=True)
        summary = {f"wait={w}ms": summarize(rounds[f"before wait={w}ms"], rounds[f"after wait={w}ms"]) for w in WAITS}
        results.data.update(variants=rounds, summary=summary)
    print(f"\ncheckout before ({BASE}) and after, {CHECKOUTS} x {ROUNDS} rounds, {CONCURRENCY} at a time "
          "(medians of the rounds; ratio: after / before of the same round):")
    for name, s in summary.items():
        print(f"  {name:12} p50 {s['before_p50_ms']:8.2f} -> {s['after_p50_ms']:8.2f} ms (x{s['ratio_p50']})   "
              f"p99 {s['before_p99_ms']:8.2f} -> {s['after_p99_ms']:8.2f} ms (x{s['ratio_p99']})")


def summarize(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, float]:
    """Medians of the rounds, and the median of each round's ratio after / before."""
    out: dict[str, float] = {}
    for q in ("p50", "p99"):
        out[f"before_{q}_ms"] = statistics.median(x[f"{q}_ms"] for x in before)
        out[f"after_{q}_ms"] = statistics.median(x[f"{q}_ms"] for x in after)
        out[f"ratio_{q}"] = round(statistics.median(a[f"{q}_ms"] / b[f"{q}_ms"]
                                                    for a, b in zip(after, before, strict=True)), 2)
    return out

if __name__ == "__main__":
    if sys.argv[1:] == ["--round"]:
        print(json.dumps(asyncio.run(one_round(os.environ["BENCH_SIM_URL"], os.environ["BENCH_DSN"],
                                               int(os.environ["BENCH_WAIT_MS"]), os.environ["BENCH_KEY"]))))
    else:
        main()
