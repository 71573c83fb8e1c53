"""make bench-overload: L4, the hold path offered 0.5x, 1x, 2x and 4x what it can serve, with its shedding on,
straight to the API processes and through HAProxy in front of the same processes, in one run.

Starts itself: hold-service as two processes of one uvicorn worker each (test database, HOLD_TTL_SECONDS=2 so
seats churn) and payment-service likewise, as cluster mode runs them, each with the shedding settings `make up`
runs with (SHED_MAX_IN_FLIGHT and SHED_QUEUE_TIMEOUT_MS from the environment, else .env, else the defaults),
and one HAProxy in front of them written by the function that writes cluster mode's (ticketing_testing.balancer:
per-server maxconn and `timeout queue` from those settings, the contract's 503 for what it refuses itself),
logging nothing. First the hold path's capacity, closed loop with wrk as make bench-holds measures it (one wrk
per process at once, summed; the median of PROBES runs, the 503s left out). Then open-loop offered load of
holds (tests/bench/open_loop.py: latency from each request's intended send time, coordinated omission counted)
at SHARES of that capacity for PHASE_SECONDS each, for each share once direct (the generator's connections
spread over the two processes) and once through HAProxy, the phases interleaved over ROUNDS rounds (the order
of shares and of the two ways reversed every other round, a fresh showtime per phase, the core-speed probe
before each round). During every 4x phase a stream of signed gateway callbacks (CALLBACK_RATE/s, each a new
event id for a payment payment-service does not know: a lookup and an insert, answered 200) goes to
payment-service the same way. Each round also offers the 4x rate to an HAProxy frontend that answers 200
itself: the generator's own lag at that rate (it shares the cores), a floor under every figure.
BENCH_OVERLOAD_CORES=split gives the servers under test (the API processes and PostgreSQL) one core and the clients
(the generator, wrk, HAProxy) the other, as a deployment gives the clients and the balancer machines of their own.

Prints, per phase: offered/s, served/s (every answer but the 503s), the served answers' p50/p99, the
refused (503) count and their p99 (and apart: those HAProxy answered itself, the instances'), HAProxy's CPU, and for the
callbacks how many were answered 200 and their p99. Then, for each way, the ratios of L4 (docs/reliability.md):
served p99 at 4x / served p99 at 0.5x (goal <= 3) and the refusals' p99 (goal < 20 ms), medians over the
rounds. Never fails on a figure; a seat held twice stops it.
"""
from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path

import asyncpg
import httpx
import orjson
import uvloop
from bench_cluster import uvicorn
from bench_holds import (
    CUSTOMERS,
    PROBE_SECONDS,
    PROBES,
    double_holds,
    forget_events,
    new_showtime,
    requests_for,
    wrk_capacity,
)
from hdrh.histogram import HdrHistogram
from open_loop import OpenLoop
from results import Results, cpu_speed
from ticketing.auth import issue_token
from ticketing.settings import ServiceSettings
from ticketing_testing import apply_migrations, env, free_port, shared_migrations, stripe_event, test_dsn
from ticketing_testing.balancer import UNAVAILABLE_MESSAGE, Door, Shedding, write
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
HOLD_MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
PAYMENT_MIGRATIONS = ROOT / "services/payment-service/src/payment_service/sql/migrations"
HOLD_FACTORY = "hold_service.entrypoints.api.app:get_application"
PAYMENT_FACTORY = "payment_service.entrypoints.api.app:get_application"
SHARES = [0.5, 1.0, 2.0, 4.0]
WAYS = ["direct", "haproxy"]
PHASE_SECONDS = float(os.environ.get("BENCH_OVERLOAD_SECONDS", "4"))
ROUNDS = int(os.environ.get("BENCH_OVERLOAD_ROUNDS", "2"))
# Open loop: with 256 connections a 4x phase waited for the generator's own connections (seconds of backlog).
CONNECTIONS = int(os.environ.get("BENCH_OVERLOAD_CONNECTIONS", "1024"))
CALLBACK_RATE, CALLBACK_CONNECTIONS = 50.0, 16
PROBE_CONNECTIONS = 32  # per process: 64 over the two, as bench-holds probes its 2 workers
# The clients and the balancer have cores of their own in a deployment; here they share 2 with the API processes
# (and the database, and whatever else runs). Once the capacity is measured, the generator (this process) and
# HAProxy get this nice value: below 0 they take their turn on a core first, so that what they add to the
# figures is theirs, not their wait behind the servers they measure. 0: all at the same priority.
PRIORITY = int(os.environ.get("BENCH_OVERLOAD_NICE", "0"))
# "split": the servers under test (the API processes, PostgreSQL's and Redis' processes) on the last core, the
# generator, wrk and HAProxy on the others, as if the clients and the balancer had machines of their own; the
# capacity is then what one core serves. "shared" (default): everything on every core.
CORES = os.environ.get("BENCH_OVERLOAD_CORES", "shared")
DISTURBED = 1.3
HOLD_DSN = test_dsn(env("HOLD_DATABASE_URL"))
PAYMENT_DSN = test_dsn(env("PAYMENT_DATABASE_URL"))
SECRET = env("JWT_SECRET", "dev-only-change-me")
WEBHOOK_SECRET = env("STRIPE_WEBHOOK_SECRET", "dev-only-change-me")
SETTINGS = ServiceSettings()  # as the services read them, and the balancer's configuration
SHEDDING = {"SHED_MAX_IN_FLIGHT": str(SETTINGS.shed_max_in_flight),
            "SHED_QUEUE_TIMEOUT_MS": f"{SETTINGS.shed_queue_timeout_ms:g}"}
BALANCER_REFUSAL = UNAVAILABLE_MESSAGE.encode()
# The generator's floor: a frontend of the same HAProxy that answers at once, without any server.
BARE_FRONTEND = """
frontend bare
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain string ok
"""


@contextmanager
def cores(mode: str) -> Iterator[Callable[[], AbstractContextManager[None]]]:
    """Pins this process (so the generator and what it starts: wrk, HAProxy) to the clients' cores and PostgreSQL's
    and Redis' processes to the servers' core for the run, and gives back a context in which what starts (the API
    processes) is on the servers' core. Every core for everyone again afterwards. "shared": nothing is pinned."""
    every = os.sched_getaffinity(0)

    @contextmanager
    def on(where: set[int]) -> Iterator[None]:
        os.sched_setaffinity(0, where)
        try:
            yield
        finally:
            os.sched_setaffinity(0, clients)

    if mode != "split" or len(every) < 2:
        clients = every
        yield lambda: on(every)
        return
    servers, clients = {max(every)}, every - {max(every)}
    databases = database_pids()  # the postmaster among them: backends it starts later inherit its core
    os.sched_setaffinity(0, clients)
    try:
        for pid in databases:
            with suppress(ProcessLookupError):  # a backend that ended meanwhile
                os.sched_setaffinity(pid, servers)
        yield lambda: on(servers)
    finally:
        for pid in database_pids():
            with suppress(ProcessLookupError):
                os.sched_setaffinity(pid, every)
        os.sched_setaffinity(0, every)


def database_pids() -> list[int]:
    """PostgreSQL's and Redis' processes (the local infra's servers, make infra starts them; pinning another user's
    needs root)."""
    found = subprocess.run(["pgrep", "-x", "(postgres|redis-server)"], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def answer_key(status: int, body: bytes) -> str:
    """"503lb": refused by HAProxy itself (its errorfile), "503": by an instance's shedder."""
    return "503lb" if status == 503 and BALANCER_REFUSAL in body else str(status)


class Phase:
    """One phase's answers: served (anything but 503) and refused (503), latency in microseconds."""

    def __init__(self) -> None:
        self.served, self.refused = HdrHistogram(1, 60_000_000, 3), HdrHistogram(1, 60_000_000, 3)
        self.refused_by = {"503": HdrHistogram(1, 60_000_000, 3), "503lb": HdrHistogram(1, 60_000_000, 3)}
        self.codes: dict[str, int] = {}
        self.seconds = self.client_cpu = self.balancer_cpu = 0.0  # the phase's length; CPU, in cores
        self.send_lag = HdrHistogram(1, 60_000_000, 3)  # the generator's own lateness (OpenLoop.send_lag), us

    def add(self, key: str, latency_us: int) -> None:
        (self.refused if key.startswith("503") else self.served).record_value(max(1, latency_us))
        if key in self.refused_by:
            self.refused_by[key].record_value(max(1, latency_us))
        self.codes[key] = self.codes.get(key, 0) + 1

    def figures(self, offered: float) -> dict:
        served = sum(v for k, v in self.codes.items() if not k.startswith("503"))
        return {"offered_per_s": round(offered), "served_per_s": round(served / self.seconds),
                "served_p50_ms": ms(self.served, 50), "served_p99_ms": ms(self.served, 99),
                "refused": self.codes.get("503", 0) + self.codes.get("503lb", 0),
                "refused_by_balancer": self.codes.get("503lb", 0), "refused_p99_ms": ms(self.refused, 99),
                "refused_by_balancer_p99_ms": ms(self.refused_by["503lb"], 99),
                "refused_by_instances_p99_ms": ms(self.refused_by["503"], 99),
                "answers": dict(sorted(self.codes.items())), "generator_cpu": round(self.client_cpu, 2),
                "generator_lag_p99_ms": ms(self.send_lag, 99),
                "balancer_cpu": round(self.balancer_cpu, 2)}


def ms(hist: HdrHistogram, q: float) -> float:
    return round(hist.get_value_at_percentile(q) / 1000, 2) if hist.get_total_count() else 0.0


def cpu_seconds(pid: int) -> float:
    """A process' CPU so far (user and system, all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


async def drive(ports: list[int], rate: float, requests: list[bytes], connections: int, balancer_pid: int) -> Phase:
    phase = Phase()
    generator = OpenLoop(answer_key)
    balancer_before = cpu_seconds(balancer_pid)
    for key, latency_us in await generator.run("127.0.0.1", ports, connections, rate, PHASE_SECONDS, requests):
        phase.add(key, latency_us)
    phase.seconds, phase.client_cpu = generator.seconds, generator.cpu
    for lag in generator.send_lag:
        phase.send_lag.record_value(max(1, int(lag * 1e6)))
    phase.balancer_cpu = (cpu_seconds(balancer_pid) - balancer_before) / generator.seconds
    return phase


def balancer(stack: ExitStack, hold_ports: list[int], pay_ports: list[int]) -> tuple[dict[str, list[int]], int, int]:
    """HAProxy as cluster mode writes it (ticketing_testing.balancer), logging nothing, with the generator's
    bare frontend: ({"hold": [door], "payment": [door]}, the bare frontend's port, HAProxy's pid)."""
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    hold, pay, bare = Door("hold-api", free_port(), tuple(hold_ports)), Door("payment-api", free_port(),
                                                                             tuple(pay_ports)), free_port()
    config = write(directory, [hold, pay], SETTINGS, log=False)
    config.write_text(config.read_text() + BARE_FRONTEND.format(port=bare))
    proc = subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=subprocess.DEVNULL)
    stack.callback(proc.wait)
    stack.callback(proc.terminate)
    deadline = time.monotonic() + 30
    for door in (hold, pay):
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{door.port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"HAProxy's {door.name} did not answer")
            time.sleep(0.2)
    return {"hold": [hold.port], "payment": [pay.port]}, bare, proc.pid


async def capacity(ports: list[int], conn: asyncpg.Connection, tokens: list[bytes]) -> tuple[float, int]:
    """Holds served per second, closed loop (a wrk per process at once, summed; the median of PROBES), its 503s
    left out."""
    sid = await new_showtime(conn)
    requests = requests_for(sid, tokens, 1)

    async def probe() -> float:
        stats = await asyncio.gather(*(asyncio.to_thread(wrk_capacity, port, requests, PROBE_SECONDS,
                                                         connections=PROBE_CONNECTIONS) for port in ports))
        return sum(p.rate * (1 - p.codes.get("503", 0) / max(1, p.done)) for p in stats)

    served = sorted([await probe() for _ in range(PROBES)])
    await forget_events(conn, [sid])
    return served[len(served) // 2], sid


async def one_round(n: int, ways: dict[str, dict[str, list[int]]], rate: float, conn: asyncpg.Connection,
                    tokens: list[bytes], sids: list[int], bare_port: int, balancer_pid: int) -> dict:
    speed = cpu_speed()["median_ms"]
    phases: dict[str, dict[str, dict]] = {way: {} for way in WAYS}
    for share in SHARES if n % 2 == 0 else SHARES[::-1]:
        for way in WAYS if n % 2 == 0 else WAYS[::-1]:
            sids.append(await new_showtime(conn))
            holds = drive(ways[way]["hold"], rate * share, requests_for(sids[-1], tokens, 10 + n), CONNECTIONS,
                          balancer_pid)
            if share == max(SHARES):
                callbacks = callback_requests(round(CALLBACK_RATE * PHASE_SECONDS) + 10)
                held, paid = await asyncio.gather(holds, drive(ways[way]["payment"], CALLBACK_RATE, callbacks,
                                                               CALLBACK_CONNECTIONS, balancer_pid))
                phases[way][f"{share:g}x"] = {**held.figures(rate * share), "callbacks": paid.figures(CALLBACK_RATE)}
            else:
                phases[way][f"{share:g}x"] = (await holds).figures(rate * share)
            await asyncio.sleep(0.5)  # what the phase left in flight drains
    top = rate * max(SHARES)
    floor = await drive([bare_port], top, requests_for(0, tokens, 1), CONNECTIONS, balancer_pid)
    return {"core_speed_ms": speed, "phases": phases, "generator_floor": floor.figures(top)}


def report_round(n: int, r: dict) -> None:
    print(f"\n== round {n} (core speed {r['core_speed_ms']:.0f} ms"
          + (", DISTURBED: the host slowed the cores)" if r["disturbed"] else ")"))
    for name in (f"{s:g}x" for s in SHARES):
        for way in WAYS:
            p = r["phases"][way][name]
            print(f"  {name:>4} {way:>7}: offered {p['offered_per_s']:6}/s  served {p['served_per_s']:6}/s  p50 "
                  f"{p['served_p50_ms']:7.1f} ms  p99 {p['served_p99_ms']:7.1f} ms;  refused (503) {p['refused']:6} "
                  f"(by HAProxy {p['refused_by_balancer']:6})  p99 {p['refused_p99_ms']:6.1f} ms (HAProxy's "
                  f"{p['refused_by_balancer_p99_ms']:.1f}, the instances' {p['refused_by_instances_p99_ms']:.1f});"
                  "  generator "
                  f"{p['generator_cpu']:.2f} core, late p99 {p['generator_lag_p99_ms']:.1f} ms;  HAProxy "
                  f"{p['balancer_cpu']:.2f} core")
            if (c := p.get("callbacks")) is not None:
                sent = sum(c["answers"].values())
                print(f"                gateway callbacks: {c['answers'].get('200', 0)} of {sent} answered 200, p99 "
                      f"{c['served_p99_ms']:.1f} ms (answers {c['answers']})")
    f = r["generator_floor"]
    print(f"  the generator alone at {f['offered_per_s']}/s (HAProxy answering at once): p50 {f['served_p50_ms']:.1f} "
          f"ms, p99 {f['served_p99_ms']:.1f} ms, {f['generator_cpu']:.2f} core, late p99 "
          f"{f['generator_lag_p99_ms']:.1f} ms")


def ratios(rounds: list[dict], way: str) -> dict:
    low, high = f"{min(SHARES):g}x", f"{max(SHARES):g}x"
    of = [r["phases"][way] for r in rounds]
    tail = [p[high]["served_p99_ms"] / max(p[low]["served_p99_ms"], 1e-3) for p in of]
    callbacks = [p[high]["callbacks"] for p in of]
    every = {f"{s:g}x": round(statistics.median(p[f"{s:g}x"]["served_p99_ms"] / max(p[low]["served_p99_ms"], 1e-3)
                                                for p in of), 2) for s in SHARES}
    return {"served_p99_over_05x": every, "served_p99_4x_over_05x": round(statistics.median(tail), 2),
            "served_p99_4x_over_05x_rounds": [round(t, 2) for t in tail],
            "served_p99_4x_ms": round(statistics.median(p[high]["served_p99_ms"] for p in of), 2),
            **{f"{key}_4x_ms": round(statistics.median(p[high][f"{key}_ms"] for p in of), 2)
               for key in ("refused_p99", "refused_by_balancer_p99", "refused_by_instances_p99")},
            "served_per_s_4x": round(statistics.median(p[high]["served_per_s"] for p in of)),
            "generator_lag_p99_4x_ms": round(statistics.median(p[high]["generator_lag_p99_ms"] for p in of), 2),
            "callbacks_200": sum(c["answers"].get("200", 0) for c in callbacks),
            "callbacks_sent": sum(sum(c["answers"].values()) for c in callbacks),
            "callbacks_p99_ms": max(c["served_p99_ms"] for c in callbacks)}


def report_ratios(way: str, figures: dict) -> None:
    print(f"\n{way}: served p99 at 4x / served p99 at 0.5x: {figures['served_p99_4x_over_05x']:.2f} (median of "
          f"{figures['served_p99_4x_over_05x_rounds']}; goal <= 3)")
    print("  served p99 at each share / at 0.5x (medians): "
          + ", ".join(f"{k} {v:.2f}" for k, v in figures["served_p99_over_05x"].items()))
    print(f"  at 4x: served {figures['served_per_s_4x']}/s, p99 {figures['served_p99_4x_ms']:.1f} ms; refusals' p99 "
          f"{figures['refused_p99_4x_ms']:.1f} ms (medians; goal < 20 ms; HAProxy's own "
          f"{figures['refused_by_balancer_p99_4x_ms']:.1f} ms, the instances' "
          f"{figures['refused_by_instances_p99_4x_ms']:.1f} ms); the generator's own lateness, p99 "
          f"{figures['generator_lag_p99_4x_ms']:.1f} ms")
    print(f"  gateway callbacks during the 4x phases: {figures['callbacks_200']} of {figures['callbacks_sent']} "
          f"answered 200, p99 {figures['callbacks_p99_ms']:.1f} ms (the worst round)")


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
        servers_core = stack.enter_context(cores(CORES))
        hold_env = {**common, "HOLD_DATABASE_URL": HOLD_DSN, "HOLD_TTL_SECONDS": "2", "SEAT_GATE_ENABLED": "true"}
        pay_env = {**common, "PAYMENT_DATABASE_URL": PAYMENT_DSN, "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET}
        with servers_core():
            hold_ports = [uvicorn(stack, HOLD_FACTORY, hold_env, 1) for _ in range(2)]
            pay_ports = [uvicorn(stack, PAYMENT_FACTORY, pay_env, 1) for _ in range(2)]
        doors, bare_port, balancer_pid = balancer(stack, hold_ports, pay_ports)
        ways = {"direct": {"hold": hold_ports, "payment": pay_ports}, "haproxy": doors}
        rate, probe_sid = await capacity(hold_ports, conn, tokens)
        sids.append(probe_sid)
        for pid in (0, balancer_pid):  # after the servers and wrk started: they keep the default
            os.setpriority(os.PRIO_PROCESS, pid, PRIORITY)
        await asyncio.sleep(2.5)  # the probe's holds lapse
        rounds = [await one_round(n, ways, rate, conn, tokens, sids, bare_port, balancer_pid) for n in range(ROUNDS)]
    fastest = min(r["core_speed_ms"] for r in rounds)
    for r in rounds:
        r["disturbed"] = r["core_speed_ms"] > DISTURBED * fastest
    doubles = sum([await double_holds(conn, s) for s in sids])
    await forget_events(conn, sids)
    await conn.close()
    if doubles:
        raise AssertionError(f"{doubles} seats held twice")
    shedding = Shedding.of(SETTINGS)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; hold-service and "
          "payment-service, 2 processes of 1 uvicorn worker each; " + " ".join(f"{k}={v}" for k, v in SHEDDING.items())
          + f"; HAProxy (as cluster mode's): maxconn {shedding.server_maxconn} per process, timeout queue "
          f"{shedding.queue_timeout_ms} ms; the generator and HAProxy at nice {PRIORITY}; cores {CORES}; "
          f"{PHASE_SECONDS:g} s per "
          f"phase, {ROUNDS} interleaved rounds, open loop over {CONNECTIONS} connections")
    client = "wrk closed loop, one per process" if shutil.which("wrk") else "no wrk"
    print(f"hold path capacity ({client}, median of {PROBES}, 503s left out): {rate:.0f} holds/s")
    for n, r in enumerate(rounds, 1):
        report_round(n, r)
    figures = {way: ratios(rounds, way) for way in WAYS}
    for way in WAYS:
        report_ratios(way, figures[way])
    floors = [r["generator_floor"]["served_p99_ms"] for r in rounds]
    print(f"\nthe generator's own p99 at the 4x rate: {statistics.median(floors):.1f} ms (median of {floors})")
    print("double holds: 0")
    extra = cost["admitted_us"] - cost["app_alone_us"]
    print(f"the shedder's own CPU per hold request, in-process: admitted {extra:.2f} us more than the app alone, "
          f"refused {cost['refused_us']:.2f} us (the server's parsing and writing aside)")
    return {"capacity_per_s": round(rate), "shedding": SHEDDING, "cores": CORES, "rounds": rounds, "shedder_cost": cost,
            "generator_floor_p99_ms": statistics.median(floors), **figures}


async def run_and_save() -> None:
    with Results("overload") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
