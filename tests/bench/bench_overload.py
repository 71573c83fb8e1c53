"""make bench-overload: L4, the hold path offered 0.5x, 1x, 2x and 4x what it can serve, with its shedding on.

Starts itself: hold-service (2 uvicorn workers, test database, HOLD_TTL_SECONDS=2 so seats churn) and
payment-service (2 workers), each with the shedding settings `make up` runs with (SHED_MAX_IN_FLIGHT and
SHED_QUEUE_TIMEOUT_MS from the environment, else the defaults). First the hold path's capacity, closed loop
with wrk as make bench-holds measures it (the median of PROBES runs, the 503s left out). Then open-loop
offered load of holds (tests/bench/open_loop.py: latency from each request's intended send time, coordinated
omission counted) at SHARES of that capacity for PHASE_SECONDS each, the shares interleaved over ROUNDS
rounds (the order reversed every other round, a fresh showtime per phase, the core-speed probe before each
round). During every 4x phase a stream of signed gateway callbacks (CALLBACK_RATE/s, each a new event id for
a payment payment-service does not know: a lookup and an insert, answered 200) goes to payment-service.

Prints, per phase: offered/s, served/s (every answer but the 503s), the served answers' p50/p99, the
refused (503) count and their p99, and for the callbacks how many were answered 200 and their p99. Then the
ratios of L4 (docs/reliability.md): served p99 at 4x / served p99 at 0.5x (goal <= 3) and the refusals' p99
(goal < 20 ms), medians over the rounds. Never fails on a figure; a seat held twice stops it.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import orjson
import uvloop
from bench_holds import (
    CUSTOMERS,
    PROBE_SECONDS,
    PROBES,
    double_holds,
    forget_events,
    new_showtime,
    requests_for,
    started_server,
    wrk_capacity,
)
from hdrh.histogram import HdrHistogram
from open_loop import OpenLoop
from results import Results, cpu_speed
from ticketing.auth import issue_token
from ticketing.settings import ServiceSettings
from ticketing_testing import apply_migrations, env, shared_migrations, stripe_event, test_dsn
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
HOLD_MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
PAYMENT_MIGRATIONS = ROOT / "services/payment-service/src/payment_service/sql/migrations"
SHARES = [0.5, 1.0, 2.0, 4.0]
PHASE_SECONDS = float(os.environ.get("BENCH_OVERLOAD_SECONDS", "4"))
ROUNDS = int(os.environ.get("BENCH_OVERLOAD_ROUNDS", "2"))
# Open loop: with 256 connections a 4x phase waited for the generator's own connections (seconds of backlog).
CONNECTIONS = int(os.environ.get("BENCH_OVERLOAD_CONNECTIONS", "1024"))
CALLBACK_RATE, CALLBACK_CONNECTIONS = 50.0, 16
DISTURBED = 1.3
HOLD_DSN = test_dsn(env("HOLD_DATABASE_URL"))
PAYMENT_DSN = test_dsn(env("PAYMENT_DATABASE_URL"))
SECRET = env("JWT_SECRET", "dev-only-change-me")
WEBHOOK_SECRET = env("STRIPE_WEBHOOK_SECRET", "dev-only-change-me")
DEFAULTS = ServiceSettings.model_fields
SHEDDING = {"SHED_MAX_IN_FLIGHT": os.environ.get("SHED_MAX_IN_FLIGHT", str(DEFAULTS["shed_max_in_flight"].default)),
            "SHED_QUEUE_TIMEOUT_MS": os.environ.get("SHED_QUEUE_TIMEOUT_MS",
                                                    str(DEFAULTS["shed_queue_timeout_ms"].default))}


class Phase:
    """One phase's answers: served (anything but 503) and refused (503), latency in microseconds."""

    def __init__(self) -> None:
        self.served, self.refused = HdrHistogram(1, 60_000_000, 3), HdrHistogram(1, 60_000_000, 3)
        self.codes: dict[str, int] = {}
        self.seconds = self.client_cpu = 0.0  # the phase's length; the load generator's own CPU, in cores

    def add(self, key: str, latency_us: int) -> None:
        (self.refused if key == "503" else self.served).record_value(max(1, latency_us))
        self.codes[key] = self.codes.get(key, 0) + 1

    def figures(self, offered: float) -> dict:
        served = sum(v for k, v in self.codes.items() if k != "503")
        return {"offered_per_s": round(offered), "served_per_s": round(served / self.seconds),
                "served_p50_ms": ms(self.served, 50), "served_p99_ms": ms(self.served, 99),
                "refused": self.codes.get("503", 0), "refused_p99_ms": ms(self.refused, 99),
                "answers": dict(sorted(self.codes.items())), "generator_cpu": round(self.client_cpu, 2)}


def ms(hist: HdrHistogram, q: float) -> float:
    return round(hist.get_value_at_percentile(q) / 1000, 2) if hist.get_total_count() else 0.0


def callback_requests(n: int) -> list[bytes]:
    """Signed as the provider signs (HMAC-SHA256 over "<t>.<raw body>"), each a new event id for a payment
    payment-service does not know; built before the phase (t stays within the 300 s tolerance)."""
    from gateway_simulator.signing import signature_header

    out = []
    for _ in range(n):
        body = orjson.dumps(stripe_event(f"cs_{uuid.uuid4().hex}", str(uuid.uuid4()), amount=2400))
        out.append(b"POST /payments/callback HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                   b"Stripe-Signature: %s\r\nContent-Length: %d\r\n\r\n%s"
                   % (signature_header(WEBHOOK_SECRET, body).encode(), len(body), body))
    return out


async def drive(port: int, rate: float, requests: list[bytes], connections: int) -> Phase:
    phase = Phase()
    generator = OpenLoop(lambda status, _: str(status))
    for key, latency_us in await generator.run("127.0.0.1", port, connections, rate, PHASE_SECONDS, requests):
        phase.add(key, latency_us)
    phase.seconds, phase.client_cpu = generator.seconds, generator.cpu
    return phase


async def capacity(port: int, conn: asyncpg.Connection, tokens: list[bytes]) -> tuple[float, int]:
    """Holds served per second, closed loop (wrk, the median of PROBES), its 503s left out."""
    sid = await new_showtime(conn)
    probes = [await asyncio.to_thread(wrk_capacity, port, requests_for(sid, tokens, 1), PROBE_SECONDS)
              for _ in range(PROBES)]
    served = sorted(p.rate * (1 - p.codes.get("503", 0) / max(1, p.done)) for p in probes)
    await forget_events(conn, [sid])
    return served[len(served) // 2], sid


async def one_round(n: int, hold_port: int, pay_port: int, rate: float, conn: asyncpg.Connection,
                    tokens: list[bytes], sids: list[int]) -> dict:
    speed = cpu_speed()["median_ms"]
    phases: dict[str, dict] = {}
    for share in SHARES if n % 2 == 0 else SHARES[::-1]:
        sids.append(await new_showtime(conn))
        holds = drive(hold_port, rate * share, requests_for(sids[-1], tokens, 10 + n), CONNECTIONS)
        if share == max(SHARES):
            callbacks = callback_requests(round(CALLBACK_RATE * PHASE_SECONDS) + 10)
            held, paid = await asyncio.gather(holds, drive(pay_port, CALLBACK_RATE, callbacks, CALLBACK_CONNECTIONS))
            phases[f"{share:g}x"] = {**held.figures(rate * share), "callbacks": paid.figures(CALLBACK_RATE)}
        else:
            phases[f"{share:g}x"] = (await holds).figures(rate * share)
        await asyncio.sleep(0.5)  # what the phase left in flight drains
    return {"core_speed_ms": speed, "phases": phases}


def report_round(n: int, r: dict) -> None:
    print(f"\n== round {n} (core speed {r['core_speed_ms']:.0f} ms"
          + (", DISTURBED: the host slowed the cores)" if r["disturbed"] else ")"))
    for name in (f"{s:g}x" for s in SHARES):
        p = r["phases"][name]
        print(f"  {name:>4}: offered {p['offered_per_s']:6}/s  served {p['served_per_s']:6}/s  p50 "
              f"{p['served_p50_ms']:7.1f} ms  p99 {p['served_p99_ms']:7.1f} ms;  refused (503) {p['refused']:6}  p99 "
              f"{p['refused_p99_ms']:6.1f} ms;  answers {p['answers']}; generator {p['generator_cpu']:.2f} core")
        if (c := p.get("callbacks")) is not None:
            sent = sum(c["answers"].values())
            print(f"        gateway callbacks: {c['answers'].get('200', 0)} of {sent} answered 200, p99 "
                  f"{c['served_p99_ms']:.1f} ms (answers {c['answers']})")


def ratios(rounds: list[dict]) -> dict:
    low, high = f"{min(SHARES):g}x", f"{max(SHARES):g}x"
    tail = [r["phases"][high]["served_p99_ms"] / max(r["phases"][low]["served_p99_ms"], 1e-3) for r in rounds]
    refusals = [r["phases"][high]["refused_p99_ms"] for r in rounds]
    callbacks = [r["phases"][high]["callbacks"] for r in rounds]
    every = {f"{s:g}x": round(statistics.median(r["phases"][f"{s:g}x"]["served_p99_ms"]
                                                 / max(r["phases"][low]["served_p99_ms"], 1e-3) for r in rounds), 2)
             for s in SHARES}
    return {"served_p99_over_05x": every, "served_p99_4x_over_05x": round(statistics.median(tail), 2),
            "served_p99_4x_over_05x_rounds": [round(t, 2) for t in tail],
            "refused_p99_4x_ms": round(statistics.median(refusals), 2),
            "callbacks_200": sum(c["answers"].get("200", 0) for c in callbacks),
            "callbacks_sent": sum(sum(c["answers"].values()) for c in callbacks),
            "callbacks_p99_ms": max(c["served_p99_ms"] for c in callbacks)}


async def shedder_cost(n: int = 100_000) -> dict:
    """The shedder's own CPU per request, in-process: a hold admitted (the route found by its template, the
    counter taken and given back) and a hold refused (its 503 written), beside calling the app alone (us)."""
    from hold_service.entrypoints.api.app import SHED_ROUTES
    from ticketing.api.limiter import Limiter
    from ticketing.api.shedding import COMMON_ROUTES, RouteTable, Shedder

    async def app(scope: dict, receive: object, send: object) -> None:
        return None

    async def send(message: dict) -> None:
        return None

    limiter = Limiter(64)
    shedder = Shedder(app, limiter=limiter, routes=RouteTable([*COMMON_ROUTES, *SHED_ROUTES]), service="bench")
    scope = {"type": "http", "method": "POST", "path": "/showtimes/123456/holds", "headers": []}
    out = {}
    for label, target, full in (("app_alone_us", app, 0), ("admitted_us", shedder, 0), ("refused_us", shedder, 64)):
        limiter.in_flight = full
        started = time.perf_counter()
        for _ in range(n):
            await target(scope, None, send)  # type: ignore[arg-type]
        out[label] = round((time.perf_counter() - started) / n * 1e6, 2)
    return out


async def main() -> dict:
    cost = await shedder_cost()
    apply_migrations(HOLD_DSN, shared_migrations(), HOLD_MIGRATIONS)
    apply_migrations(PAYMENT_DSN, shared_migrations(), PAYMENT_MIGRATIONS)
    tokens = [issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer").encode()
              for _ in range(CUSTOMERS)]
    common = {"LOG_LEVEL": "WARNING", "APP_ENV": "dev", "ACCESS_LOG": "false", **UNLIMITED_HOLDS, **SHEDDING}
    conn = await asyncpg.connect(HOLD_DSN)
    sids: list[int] = []
    with ExitStack() as stack:
        hold_port, _ = started_server(stack, "hold_service.entrypoints.api.app:get_application",
                                      {**common, "HOLD_DATABASE_URL": HOLD_DSN, "HOLD_TTL_SECONDS": "2",
                                       "SEAT_GATE_ENABLED": "true"})
        pay_port, _ = started_server(stack, "payment_service.entrypoints.api.app:get_application",
                                     {**common, "PAYMENT_DATABASE_URL": PAYMENT_DSN,
                                      "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET})
        rate, probe_sid = await capacity(hold_port, conn, tokens)
        sids.append(probe_sid)
        await asyncio.sleep(2.5)  # the probe's holds lapse
        rounds = [await one_round(n, hold_port, pay_port, rate, conn, tokens, sids) for n in range(ROUNDS)]
    fastest = min(r["core_speed_ms"] for r in rounds)
    for r in rounds:
        r["disturbed"] = r["core_speed_ms"] > DISTURBED * fastest
    doubles = sum([await double_holds(conn, s) for s in sids])
    await forget_events(conn, sids)
    await conn.close()
    if doubles:
        raise AssertionError(f"{doubles} seats held twice")
    print(f"machine: {os.cpu_count()} cores; hold-service and payment-service, 2 uvicorn workers each; "
          + " ".join(f"{k}={v}" for k, v in SHEDDING.items()) + "; "
          f"{PHASE_SECONDS:g} s per phase, {ROUNDS} interleaved rounds, open loop over {CONNECTIONS} connections")
    client = "wrk closed loop" if shutil.which("wrk") else "no wrk"
    print(f"hold path capacity ({client}, median of {PROBES}, 503s left out): {rate:.0f} holds/s")
    for n, r in enumerate(rounds, 1):
        report_round(n, r)
    figures = ratios(rounds)
    print(f"\nserved p99 at 4x / served p99 at 0.5x: {figures['served_p99_4x_over_05x']:.2f} (median of "
          f"{figures['served_p99_4x_over_05x_rounds']}; goal <= 3)")
    print("served p99 at each share / at 0.5x (medians): "
          + ", ".join(f"{k} {v:.2f}" for k, v in figures["served_p99_over_05x"].items()))
    print(f"refusals' p99 at 4x: {figures['refused_p99_4x_ms']:.1f} ms (median; goal < 20 ms)")
    print(f"gateway callbacks during the 4x phases: {figures['callbacks_200']} of {figures['callbacks_sent']} "
          f"answered 200, p99 {figures['callbacks_p99_ms']:.1f} ms (the worst round)")
    print("double holds: 0")
    extra = cost["admitted_us"] - cost["app_alone_us"]
    print(f"the shedder's own CPU per hold request, in-process: admitted {extra:.2f} us more than the app alone, "
          f"refused {cost['refused_us']:.2f} us (the server's parsing and writing aside)")
    return {"capacity_per_s": round(rate), "shedding": SHEDDING, "rounds": rounds, "shedder_cost": cost, **figures}


async def run_and_save() -> None:
    with Results("overload") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
