"""make bench-sustained: granted holds/s the whole system keeps up with, every consumer caught up at the end.

A hold's answer is only part of its cost: its SeatsHeld event is relayed to Kafka by hold-service's worker and
read by every consumer group of booking-events (hold, payment, voucher, notifier). This bench starts every process
of the e2e stack (tests/e2e/stack.py: each API, each worker with its relay, consumers and periodic jobs, the
notifier, the gateway simulator and the SMTP sink) on the test database (the Makefile target gives it one of
its own), then, for each offered rate of BENCH_SUSTAINED_RATES:

  1. waits until every consumer group has caught up with the topic as it is (other runs publish on it too);
  2. offers granted holds at that rate for BENCH_SUSTAINED_SECONDS, open loop (tests/bench/open_loop.py): one
     fresh seat per request on a showtime of its own, each by a customer of his own, so every answer the
     service can give is a 201 (HOLD_TTL_SECONDS=600: nothing expires during the run);
  3. once every answer is in, waits until every service's outbox is drained, takes the topics' end offsets then,
     and waits until every consumer group has committed up to them.

Sustained holds/s = granted holds / (first request to everything caught up). A rate is kept up with when the
catch-up after the window takes no more than 10 % of the window. CPU per granted hold over the same time, from
/proc: the request path (the hold API process and the PostgreSQL backends it is connected to) and the deferred
work (the four workers and their backends); a backend belongs to the process whose socket is its client port.
The other processes (idle APIs, the simulator, the sink) are reported apart, the WAL writer and autovacuum not
at all. Each step also records the load average and the core-speed probe (results.cpu_speed) taken before it:
the machine is shared, only figures of one run compare.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import orjson
import uvloop

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.e2e: the stack the end-to-end tests start
sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name

from bench_granted import backend_cpu, drop_showtimes, new_showtime, seat_code  # noqa: E402
from bench_holds import Stats, open_loop, pct  # noqa: E402
from results import Results, cpu_speed, load_average  # noqa: E402
from ticketing.auth import issue_token  # noqa: E402
from ticketing_testing import apply_migrations, env, shared_migrations, test_dsn  # noqa: E402

from tests.e2e.saga.offsets import KafkaView  # noqa: E402
from tests.e2e.stack import Stack, Timings, start_stack  # noqa: E402

RATES = [float(x) for x in os.environ.get("BENCH_SUSTAINED_RATES", "60,120,240,360,480").split(",") if x]
SECONDS = float(os.environ.get("BENCH_SUSTAINED_SECONDS", "20"))
CATCH_UP_LIMIT = float(os.environ.get("BENCH_SUSTAINED_TIMEOUT", "180"))  # seconds after the window
IDLE_SECONDS = 5.0
KEPT_UP = 0.10  # the catch-up may take this share of the window
REQUEST_PATH = ("hold-api",)
DEFERRED = ("hold-worker", "pay-worker", "voucher-worker", "notifier-worker")
SECRET = env("JWT_SECRET", "dev-only-change-me")
PG_PORT = 5432


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) of every process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                head, tail = (entry / "stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            out[int(entry.name)] = (int(tail.split()[1]), head.split("(", 1)[1])
    return out


def descendants(root: int, table: dict[int, tuple[int, str]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    pids, todo = [], [root]
    while todo:
        pids.append(pid := todo.pop())
        todo.extend(children.get(pid, []))
    return pids


def tcp_connections() -> dict[str, tuple[int, int]]:
    """socket inode -> (local port, remote port) of every TCP socket of this network namespace."""
    out = {}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            out[fields[9]] = (int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16))
    return out


def socket_inodes(pid: int) -> list[str]:
    inodes = []
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.append(target[8:-1])
    except OSError:
        pass
    return inodes


class Meter:
    """CPU seconds of the stack's processes (with their children) and of the PostgreSQL backends each is
    connected to: a backend is the process at the other end of its client socket (read from /proc, so every
    role's backends are seen, which pg_stat_activity hides from a role that is not a superuser). Sampled every
    second, so that a backend that ends during a step still counts up to its last sample."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.procs: dict[str, float] = {}
        self.backends: dict[int, tuple[str, float]] = {}  # backend pid -> (owner process, CPU seconds)

    def sample(self) -> None:
        table, tcp = processes(), tcp_connections()
        owner: dict[int, str] = {}  # client port -> the stack's process
        for name, proc in self.stack.procs.items():
            if proc.popen is None:
                continue
            pids = descendants(proc.popen.pid, table)
            self.procs[name] = sum(backend_cpu(pids).values())
            for pid in pids:
                for inode in socket_inodes(pid):
                    local, remote = tcp.get(inode, (0, 0))
                    if remote == PG_PORT:
                        owner[local] = name
        ours = {}
        for pid, (_, command) in table.items():
            if command == "postgres":
                for inode in socket_inodes(pid):
                    local, remote = tcp.get(inode, (0, 0))
                    if local == PG_PORT and remote in owner:
                        ours[pid] = owner[remote]
        for pid, cpu in backend_cpu(list(ours)).items():
            self.backends[pid] = (ours[pid], cpu)

    def totals(self) -> tuple[dict[str, float], dict[int, tuple[str, float]]]:
        return dict(self.procs), dict(self.backends)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.to_thread(self.sample)
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except TimeoutError:
                pass


def spent(before: tuple[dict[str, float], dict[int, tuple[str, float]]],
          after: tuple[dict[str, float], dict[int, tuple[str, float]]]) -> tuple[dict[str, float], dict[str, float]]:
    """CPU seconds per process, and of the backends per owning process, between two totals."""
    procs = {name: cpu - before[0].get(name, 0.0) for name, cpu in after[0].items()}
    backends: dict[str, float] = {}
    for pid, (owner, cpu) in after[1].items():
        backends[owner] = backends.get(owner, 0.0) + cpu - before[1].get(pid, (owner, 0.0))[1]
    return procs, backends


async def outboxes_left(outboxes: list[asyncpg.Connection]) -> int:
    """Events not yet published, over every service's outbox (a connection with each service's role)."""
    return sum([await c.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL") for c in outboxes])


async def caught_up(stack: Stack, kafka: KafkaView, outboxes: list[asyncpg.Connection],
                    deadline: float) -> tuple[bool, dict[str, int]]:
    """Outboxes drained, then every group committed up to the topics' ends as they were then."""
    while left := await outboxes_left(outboxes):
        if time.perf_counter() > deadline:
            return False, {"outbox": left}
        await asyncio.sleep(0.1)
    groups = stack.consumer_groups()
    targets = {topic: await kafka.end_offsets(topic) for topic in groups}
    while True:
        lags = await kafka.lags(groups, targets)
        if not any(lags.values()):
            return True, lags
        if time.perf_counter() > deadline:
            return False, lags
        await asyncio.sleep(0.1)


def hold_requests(sid: int, count: int) -> list[bytes]:
    """One request per seat, each by a customer of his own (every answer the service can give is a 201)."""
    out = []
    for k in range(count):
        token = issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer", ttl_seconds=7200)
        body = orjson.dumps({"seats": [seat_code(k)]})
        out.append(b"POST /showtimes/%d/holds HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                   % (sid, token.encode(), len(body), body))
    return out


async def idle(stack: Stack, seconds: float) -> dict[str, float]:
    """Cores each process and its backends use with nothing offered: the fixed cost in every step's figures."""
    meter = Meter(stack)
    meter.sample()
    before = meter.totals()
    await asyncio.sleep(seconds)
    meter.sample()
    procs, backends = spent(before, meter.totals())
    return {n: round((procs[n] + backends.get(n, 0.0)) / seconds, 4) for n in sorted(procs)}


async def step(stack: Stack, conn: asyncpg.Connection, outboxes: list[asyncpg.Connection], kafka: KafkaView,
               rate: float) -> dict:
    port = urlsplit(stack.url["hold"]).port
    assert port is not None
    await kafka.wait_caught_up(stack.consumer_groups(), timeout=120)
    count = math.ceil(rate * SECONDS)
    sid = await new_showtime(conn, count + 100)
    requests = hold_requests(sid, count)
    speed, load = cpu_speed(), load_average()
    meter = Meter(stack)
    meter.sample()
    before, stop = meter.totals(), asyncio.Event()
    sampling = asyncio.create_task(meter.run(stop))
    began = time.perf_counter()
    stats: Stats = await open_loop(port, rate, SECONDS, requests)
    answered = time.perf_counter() - began
    ok, lags = await caught_up(stack, kafka, outboxes, time.perf_counter() + CATCH_UP_LIMIT)
    elapsed = time.perf_counter() - began
    stop.set()
    await sampling
    meter.sample()
    procs, backends = spent(before, meter.totals())
    granted = stats.codes.get("201", 0)
    held = await conn.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status = 'HELD'", sid)
    await drop_showtimes(conn, [sid])
    per_hold = 1000 / max(1, granted)
    request_cpu = sum(procs.get(n, 0.0) + backends.get(n, 0.0) for n in REQUEST_PATH)
    deferred_cpu = sum(procs.get(n, 0.0) + backends.get(n, 0.0) for n in DEFERRED)
    others = [n for n in procs if n not in REQUEST_PATH + DEFERRED]
    return {
        "offered_per_s": rate, "seconds": SECONDS, "granted": granted, "held_in_db": held, "answers": stats.codes,
        "answers_per_s": round(stats.rate, 1), "p99_201_ms": round(pct(stats, 99, "201"), 1),
        "p50_201_ms": round(pct(stats, 50, "201"), 1), "answered_in_s": round(answered, 2),
        "caught_up": ok, "lags_at_end": lags, "catch_up_s": round(elapsed - SECONDS, 2),
        "kept_up": ok and elapsed - SECONDS <= KEPT_UP * SECONDS,
        "sustained_per_s": round(granted / elapsed, 1) if ok else 0.0,
        "cpu_ms_per_hold": {
            "request_path": round(request_cpu * per_hold, 2), "deferred": round(deferred_cpu * per_hold, 2),
            "others": round(sum(procs[n] + backends.get(n, 0.0) for n in others) * per_hold, 2),
            "processes": {n: round(v * per_hold, 2) for n, v in sorted(procs.items())},
            "their_backends": {n: round(v * per_hold, 2) for n, v in sorted(backends.items())}},
        "cores_busy": round((sum(procs.values()) + sum(backends.values())) / elapsed, 2),
        "generator_cores": round(stats.client_cpu, 2), "load_before": load, "cpu_speed_before_ms": speed["median_ms"],
    }


def print_step(s: dict) -> None:
    c = s["cpu_ms_per_hold"]
    state = ("kept up" if s["kept_up"] else "behind") if s["caught_up"] else f"NOT caught up: {s['lags_at_end']}"
    print(f"offered {s['offered_per_s']:5.0f}/s: granted {s['granted']} (answers {s['answers']}), p99 "
          f"{s['p99_201_ms']:.0f} ms; caught up {s['catch_up_s']:.1f} s after the window ({state}); sustained "
          f"{s['sustained_per_s']:.0f} holds/s; CPU per hold: request path {c['request_path']:.2f} ms, deferred "
          f"{c['deferred']:.2f} ms, others {c['others']:.2f} ms; {s['cores_busy']:.2f} cores busy; load "
          f"{s['load_before']}, core-speed probe {s['cpu_speed_before_ms']:.0f} ms", flush=True)
    print(f"    per process (ms/hold): {c['processes']}; their backends: {c['their_backends']}", flush=True)


def main() -> dict:
    """The stack is started outside the event loop: start_stack runs asyncio itself while it starts."""
    def migrated_dsn(variable: str, folder: Path) -> str:
        dsn = test_dsn(env(variable))
        apply_migrations(dsn, shared_migrations(), folder)
        return dsn

    bootstrap = env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    with tempfile.TemporaryDirectory(prefix="bench-sustained-") as tmp:
        logs, began = Path(tmp), time.monotonic()
        with start_stack(migrated_dsn, bootstrap=bootstrap, redis_url=env("REDIS_URL", "redis://127.0.0.1:6379/0"),
                         jwt_secret=SECRET, mail_dir=logs / "mail", logs=logs,
                         timings=Timings(hold_ttl=600, hold_max=1200)) as stack:
            print(f"stack up in {time.monotonic() - began:.0f} s: {', '.join(stack.procs)}", flush=True)
            quiet, steps = uvloop.run(measure(stack))
    kept = [s for s in steps if s["kept_up"]]
    best = max((s["sustained_per_s"] for s in steps), default=0.0)
    print(f"\nmachine: {os.cpu_count()} cores, shared (absolute figures are noisy; compare steps of one run)")
    print(f"highest offered rate kept up with (catch-up <= {KEPT_UP:.0%} of the {SECONDS:.0f} s window): "
          f"{max((s['offered_per_s'] for s in kept), default=0):.0f}/s; highest sustained {best:.0f} granted "
          f"holds/s (goal >= 261: 3x the 87/s measured before)")
    return {"seconds": SECONDS, "idle_cores": quiet, "steps": steps, "best_sustained_per_s": best,
            "kept_up_per_s": max((s["offered_per_s"] for s in kept), default=0.0)}


async def measure(stack: Stack) -> tuple[dict[str, float], list[dict]]:
    steps = []
    conn = await asyncpg.connect(stack.dsn["hold"])
    outboxes = [await asyncpg.connect(dsn) for dsn in stack.dsn.values()]
    async with KafkaView(stack.bootstrap) as kafka:
        await kafka.wait_caught_up(stack.consumer_groups(), timeout=120)
        quiet = await idle(stack, IDLE_SECONDS)
        print(f"idle, cores per process (with its backends) over {IDLE_SECONDS:.0f} s: {quiet}", flush=True)
        for rate in RATES:
            steps.append(await step(stack, conn, outboxes, kafka, rate))
            print_step(steps[-1])
    for c in [conn, *outboxes]:
        await c.close()
    return quiet, steps


def run_and_save() -> None:
    with Results("sustained") as r:
        r.data.update(main())


if __name__ == "__main__":
    sys.exit(run_and_save())
