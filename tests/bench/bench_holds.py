"""make bench-holds: hold throughput and latency on one 300-seat showtime.

Starts itself: hold-service (2 uvicorn workers, test database) with the Redis gate on and off, and a
bare FastAPI endpoint of the same shape. Capacity of each is measured with the same cheap client, `wrk`
(C, one thread, closed loop over keep-alive connections, pre-built requests; the median of PROBES runs): a
Python load generator on the same 2 cores would eat the CPU it is measuring. Latency is then measured
open loop (constant arrival rate at 70 % of that capacity; latency from the *intended* send time, so
coordinated omission is counted; HdrHistogram) by tests/bench/open_loop.py over pre-built raw HTTP/1.1 requests.
Prints capacities, p50/p99 at 70 % (of every answer, and of the admitted holds alone: those are the ones
that wait for Postgres, in waves), gate vs Postgres rejections, Postgres row updates per successful
hold and the double-hold invariant. Holds last HOLD_TTL_SECONDS=2 so seats churn (lazy expiry) instead
of selling out in the first 100 ms.

The latency goal is a ratio that stands on a shared machine: the admitted holds' p99 at 70 % of the gate-on
capacity beside the bare endpoint's p99 at the same offered rate, in ROUNDS interleaved rounds (both servers
up, the order swapped every round, a fresh showtime each), each with the core-speed probe (results.cpu_speed)
taken just before it. A round whose probe took over DISTURBED times the run's fastest was slowed by a
neighbour on the host, and is marked so. Each round also runs the bare endpoint at 70 % of its own capacity:
the p99 any endpoint of this framework reaches on this machine when it serves 70 % of what it can. Without
`wrk` (apt-get install wrk) capacity falls back to an overloaded open-loop probe (BENCH_PROBE_RATE), which
understates the bare endpoint.
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
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import httpx
import orjson
import uvloop
from hdrh.histogram import HdrHistogram
from open_loop import OpenLoop
from results import Results, cpu_speed
from ticketing.auth import issue_token
from ticketing.launcher import API_SERVER_OPTIONS
from ticketing_testing import apply_migrations, env, free_port, service_process, shared_migrations, test_dsn
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
CUSTOMERS, CONNECTIONS, ROWS = 5000, 128, "ABCDEFGHIJKLMNO"  # 15 rows x 20 seats = 300
PROBE_SECONDS, RUN_SECONDS, SWEEP_SECONDS, PROBES = 4.0, 6.0, 4.0, 3
# Offered load as shares of the measured capacity, for the report's throughput and p99 plot (gate on; 0.7 is
# the 70 % run itself).
SWEEP = [float(x) for x in os.environ.get("BENCH_HOLDS_SWEEP", "0.3,0.5,0.9,1.2").split(",") if x]
WRK_CONNECTIONS, REQUESTS = 64, 4000  # pre-built requests, cycled
ROUNDS, DISTURBED = int(os.environ.get("BENCH_HOLDS_ROUNDS", "3")), 1.3
DSN = test_dsn(env("HOLD_DATABASE_URL"))
SECRET = env("JWT_SECRET", "dev-only-change-me")


class Stats:
    def __init__(self) -> None:
        self.hist = HdrHistogram(1, 60_000_000, 3)  # microseconds, every answer
        self.by_key: dict[str, HdrHistogram] = {}  # the same, per answer kind ("201": the admitted holds)
        self.codes: dict[str, int] = {}
        self.done = 0
        self.rate = 0.0
        self.client_cpu = 0.0  # the load generator's own CPU, in cores (open loop only)

    def add(self, key: str, latency_us: int) -> None:
        self.hist.record_value(max(1, latency_us))
        if (hist := self.by_key.get(key)) is None:
            hist = self.by_key[key] = HdrHistogram(1, 60_000_000, 3)
        hist.record_value(max(1, latency_us))
        self.codes[key] = self.codes.get(key, 0) + 1
        self.done += 1


def _request(sid: int, token: bytes, rng: random.Random) -> bytes:
    row, n = rng.choice(ROWS), rng.randint(1, 4)
    start = rng.randint(1, 21 - n)
    body = orjson.dumps({"seats": [f"{row}{i}" for i in range(start, start + n)]})
    return (b"POST /showtimes/%d/holds HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (sid, token, len(body), body))


KEY_SLOT = b"@" * 16  # each request's Idempotency-Key, written by wrk (KEYED_REQUEST): the same length


def keyed_refused_request(sid: int, token: bytes) -> bytes:
    """A keyed hold of two seats that are held already: its key is claimed, the gate refuses it, the refusal
    is stored under the key."""
    body = b'{"seats":["A1","A2"]}'
    return (b"POST /showtimes/%d/holds HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
            b"Idempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (sid, token, KEY_SLOT, len(body), body))


def requests_for(sid: int, tokens: list[bytes], seed: int) -> list[bytes]:
    """Built before the clock starts: the generator only writes bytes."""
    rng = random.Random(seed)
    return [_request(sid, rng.choice(tokens), rng) for _ in range(REQUESTS)]


WRK_SCRIPT = """
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {}; i = 0 end
function request() i = i % #reqs + 1; return reqs[i] end
function response(status, headers, body)
  local k = tostring(status)
  if status == 409 and string.find(body, '"decidedBy":"gate"', 1, true) then k = "409gate" end
  counts[k] = (counts[k] or 0) + 1
end
function done(summary, latency, requests)
  local out = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("counts")) do out[k] = (out[k] or 0) + v end
  end
  io.write("COUNTS")
  for k, v in pairs(out) do io.write(" " .. k .. "=" .. v) end
  io.write(string.format("\\nSUMMARY %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout))
end
"""


# Replaces WRK_SCRIPT's request(): a key of its own for every request (a run's random prefix and a counter).
KEYED_REQUEST = """
math.randomseed(os.time())
local run, n = math.random(0, 2^30), 0
function request()
  i = i % #reqs + 1; n = n + 1
  return (string.gsub(reqs[i], "SLOT", string.format("%08x%08x", run, n), 1))
end
""".replace("SLOT", KEY_SLOT.decode())


def _lua_string(raw: bytes) -> str:
    text = raw.decode().replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r", "\\r").replace("\n", "\\n") + '"'


def wrk_capacity(port: int, requests: list[bytes], seconds: float, lua: str = "",
                 connections: int = WRK_CONNECTIONS) -> Stats:
    """Closed loop, as fast as the server answers: responses/s is the capacity (latency is queueing). `lua`
    comes after WRK_SCRIPT (KEYED_REQUEST)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write("reqs = {" + ",\n".join(_lua_string(r) for r in requests) + "}\n" + WRK_SCRIPT + lua)
        script.flush()
        out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", "--timeout", "10s",
                              "-s", script.name, f"http://127.0.0.1:{port}"],
                             capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"wrk failed: {out.stderr or out.stdout}")
    stats = Stats()
    for line in out.stdout.splitlines():
        if line.startswith("COUNTS"):
            stats.codes = {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
        elif line.startswith("SUMMARY"):
            n, duration_us, p50, p99, errors = map(int, line.split()[1:])
            stats.done, stats.rate = n, n / (duration_us / 1e6)
            stats.hist.record_value(max(1, p50))  # closed loop: only p50/p99 are kept, as two samples
            stats.hist.record_value(max(1, p99))
            if errors:
                stats.codes["error"] = errors
    return stats


async def open_loop(port: int, rate: float, seconds: float, requests: list[bytes]) -> Stats:
    """Constant arrival rate; a request waiting for a free connection is late, and counted so."""
    stats = Stats()
    generator = OpenLoop(lambda status, body: str(status) + ("gate" if b'"decidedBy":"gate"' in body else ""))
    for key, latency_us in await generator.run("127.0.0.1", port, CONNECTIONS, rate, seconds, requests):
        stats.add(key, latency_us)
    stats.rate, stats.client_cpu = stats.done / generator.seconds, generator.cpu
    return stats


async def new_showtime(conn: asyncpg.Connection) -> int:
    sid = random.randint(10**15, 2**52)
    await conn.execute("INSERT INTO showtime (showtime_id, title, starts_at, price_cents, prices) "
                       "VALUES ($1, 'bench', now() + interval '1 day', 1000, '{\"STANDARD\": {\"ADULT\": 1000}}')", sid)
    await conn.execute("INSERT INTO show_seat (showtime_id, seat_code, row_name, x) SELECT $1, r || n, r, n FROM "
                       "unnest($2::text[]) r, generate_series(1, 20) n", sid, list(ROWS))
    return sid


async def pg_counters(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables "
                                   "WHERE relname IN ('show_seat', 'showtime', 'booking')"))


async def forget_events(conn: asyncpg.Connection, sids: list[int]) -> None:
    """No relay runs here: drop the bench's unpublished events, or the next test run's relay (same test
    database) would flood booking-events with them and its consumers would wade through them."""
    await conn.execute("DELETE FROM outbox WHERE published_at IS NULL "
                       "AND (convert_from(payload, 'UTF8')::jsonb ->> 'showtimeId')::bigint = ANY($1::bigint[])", sids)


async def double_holds(conn: asyncpg.Connection, sid: int) -> int:
    """Seats held or booked by a live hold that does not list them, or listed by two live holds."""
    return int(await conn.fetchval("""
        SELECT count(*) FROM (
            SELECT seat, count(*) FROM booking, unnest(seats) seat
            WHERE showtime_id = $1 AND (status = 'BOOKED' OR (status = 'HELD' AND expires_at >= now()))
            GROUP BY seat HAVING count(*) > 1) d""", sid))


def pct(stats: Stats, q: float, key: str | None = None) -> float:
    """ms; of every answer, or of one kind (`key`: "201", "409gate"...; 0 when there was none)."""
    hist = stats.hist if key is None else stats.by_key.get(key)
    return 0.0 if hist is None else float(hist.get_value_at_percentile(q)) / 1000.0


def server(stack: ExitStack, factory: str, extra_env: dict[str, str], app_dir: str | None = None) -> int:
    return started_server(stack, factory, extra_env, app_dir)[0]


def started_server(stack: ExitStack, factory: str, extra_env: dict[str, str],
                   app_dir: str | None = None) -> tuple[int, int]:
    """(port, pid): 2 uvicorn workers served as every deployment serves them (API_SERVER_OPTIONS: no proxy-headers
    layer, the head-limited HTTP protocol), stopped with the stack."""
    port = free_port()
    args = ["-m", "uvicorn", "--factory", factory, "--workers", "2", "--host", "127.0.0.1",
            "--port", str(port), *API_SERVER_OPTIONS, "--log-level", "warning"]
    proc = stack.enter_context(service_process(args + (["--app-dir", app_dir] if app_dir else []), extra_env,
                                               ready_url=f"http://127.0.0.1:{port}/healthz", timeout=60))
    return port, proc.pid


async def measure(name: str, factory: str, env_: dict[str, str], tokens: list[bytes], probe_rate: float,
                  run_share: float | None, conn: asyncpg.Connection, app_dir: str | None = None,
                  sweep: list[float] | None = None) -> dict:
    sids = [await new_showtime(conn), await new_showtime(conn)]
    points: list[dict] = []
    before = await pg_counters(conn)
    with ExitStack() as stack:
        port = server(stack, factory, env_, app_dir)
        probe_requests = requests_for(sids[0], tokens, 1)
        if shutil.which("wrk"):
            # the median of PROBES: one probe that caught a quiet moment of the shared machine made "70 %" an
            # overload in the run that followed (p99 in seconds)
            probes = [await asyncio.to_thread(wrk_capacity, port, probe_requests, PROBE_SECONDS) for _ in range(PROBES)]
            probe = sorted(probes, key=lambda s: s.rate)[len(probes) // 2]
        else:
            probe = await open_loop(port, probe_rate, PROBE_SECONDS, probe_requests)
        run = None
        if run_share is not None:
            run_requests = requests_for(sids[1], tokens, 2)
            await asyncio.sleep(2.5)  # the probe's holds expire: the run starts on an open showtime
            run = await open_loop(port, probe.rate * run_share, RUN_SECONDS, run_requests)
            points.append(point(run_share, probe.rate, run))
        for share in sweep or []:
            sids.append(await new_showtime(conn))
            await asyncio.sleep(2.5)
            stats = await open_loop(port, probe.rate * share, SWEEP_SECONDS, requests_for(sids[-1], tokens, 3))
            points.append(point(share, probe.rate, stats))
    await asyncio.sleep(0.5)  # backends flush their table statistics when they exit
    updates = await pg_counters(conn) - before
    doubles = sum([await double_holds(conn, s) for s in sids])
    await forget_events(conn, sids)
    return {"name": name, "probe": probe, "run": run, "updates": updates, "doubles": doubles,
            "sweep": sorted(points, key=lambda p: p["offered_per_s"])}


async def keyed_refusals(conn: asyncpg.Connection, factory: str, service_env: dict[str, str],
                         tokens: list[bytes]) -> Stats:
    """Capacity for keyed hold requests the gate refuses, the path most keyed requests of a sale take: the
    key's claim, the gate's answer, the refusal stored (wrk, the median of PROBES after one to warm up). The
    two seats asked for stay held the whole time (HOLD_TTL_SECONDS=600)."""
    sid = await new_showtime(conn)
    with ExitStack() as stack:
        port = server(stack, factory, {**service_env, "HOLD_TTL_SECONDS": "600"})
        async with httpx.AsyncClient() as client:
            taken = await client.post(f"http://127.0.0.1:{port}/showtimes/{sid}/holds", json={"seats": ["A1", "A2"]},
                                      headers={"Authorization": f"Bearer {tokens[0].decode()}"})
            assert taken.status_code == 201, taken.text
        requests = [keyed_refused_request(sid, token) for token in tokens[1:REQUESTS + 1]]
        probes = [await asyncio.to_thread(wrk_capacity, port, requests, PROBE_SECONDS, KEYED_REQUEST)
                  for _ in range(PROBES + 1)][1:]
    await forget_events(conn, [sid])
    return sorted(probes, key=lambda p: p.rate)[len(probes) // 2]


def point(share: float, capacity: float, s: Stats) -> dict:
    created = s.codes.get("201", 0)
    return {"share": share, "offered_per_s": round(capacity * share), "answered_per_s": round(s.rate),
            "created": created, "admitted_per_s": round(created * s.rate / max(1, s.done), 1),
            "p50_ms": pct(s, 50), "p99_ms": pct(s, 99), "admitted_p99_ms": pct(s, 99, "201")}


def figures(r: dict, bare: float) -> dict:
    """One configuration's figures for var/bench/holds.json."""
    probe, run = r["probe"], r["run"]
    out = {"capacity_per_s": round(probe.rate), "of_bare": round(probe.rate / bare, 3), "double_holds": r["doubles"],
           "sweep": r["sweep"]}
    if run is not None:
        # the sweep's holds are in the updates too (one Postgres counter over the whole phase)
        created = probe.codes.get("201", 0) + sum(p["created"] for p in r["sweep"])
        out.update({"run70_offered_per_s": round(probe.rate * 0.7), "run70_p50_ms": pct(run, 50),
                    "run70_p99_ms": pct(run, 99), "run70_admitted_p50_ms": pct(run, 50, "201"),
                    "run70_admitted_p99_ms": pct(run, 99, "201"),
                    "run70_admitted_per_s": point(0.7, probe.rate, run)["admitted_per_s"],
                    "gate_share": round(run.codes.get("409gate", 0) / max(1, run.done), 3),
                    "pg_rows_per_hold": round(r["updates"] / max(1, created), 2)})
    return out


def report(r: dict, bare: float) -> None:
    probe, run = r["probe"], r["run"]
    print(f"\n== {r['name']}")
    print(f"capacity (offered above it, responses/s): {probe.rate:8.0f}   = {probe.rate / bare:5.1%} of bare")
    for label, s in (("probe", probe), ("70% run", run)):
        if s is None:
            continue
        created = s.codes.get("201", 0)
        gate, pg = s.codes.get("409gate", 0), s.codes.get("409", 0)
        print(f"  {label:8s}: {s.done} requests, {s.rate:7.0f} responses/s, holds created "
              f"{created} ({created / max(1e-9, s.done):.1%}, {created * s.rate / max(1, s.done):.0f} admitted/s); "
              f"p50 {pct(s, 50):7.1f} ms  p99 {pct(s, 99):7.1f} ms"
              + (f"; admitted holds p50 {pct(s, 50, '201'):7.1f} ms  p99 {pct(s, 99, '201'):7.1f} ms"
                 if s.by_key else "")  # wrk's probe keeps no latency per answer
              + (f"; load generator CPU {s.client_cpu:.2f} core" if s.client_cpu else ""))
        print(f"            409 by gate {gate / max(1, s.done):.1%}, by Postgres {pg / max(1, s.done):.1%}; "
              f"other {({k: v for k, v in s.codes.items() if k not in ('201', '409', '409gate')})}")
    if run is not None:
        created = probe.codes.get("201", 0) + sum(p["created"] for p in r["sweep"])
        print(f"  Postgres rows updated per successful hold: {r['updates'] / max(1, created):.2f} "
              f"(show_seat + showtime + booking n_tup_upd)")
        print(f"  double holds: {r['doubles']}")


async def latency_rounds(conn: asyncpg.Connection, factory: str, service_env: dict[str, str], tokens: list[bytes],
                         rate: float, bare_rate: float) -> list[dict]:
    """Admitted holds (gate on) and the bare endpoint at the same offered rate, in interleaved rounds; beside
    them, the bare endpoint at 70 % of its own capacity (`bare_rate`): how far the machine alone lifts a p99
    when an endpoint runs at 70 % of what it can serve."""
    rounds, sids = [], []
    with ExitStack() as stack:
        bare_port = server(stack, "bare_app:get_application", {}, app_dir=str(Path(__file__).parent))
        hold_port = server(stack, factory, service_env)
        for n in range(ROUNDS):
            sids.append(await new_showtime(conn))
            speed = cpu_speed()["median_ms"]
            runs = [("holds", hold_port, rate, requests_for(sids[-1], tokens, 10 + n)),
                    ("bare", bare_port, rate, requests_for(1, [b"x"], 1)),
                    ("bare70", bare_port, bare_rate, requests_for(1, [b"x"], 1))]
            stats = {name: await open_loop(port, offered, RUN_SECONDS, reqs)
                     for name, port, offered, reqs in (runs if n % 2 == 0 else runs[::-1])}
            holds, bare, own = stats["holds"], stats["bare"], stats["bare70"]
            rounds.append({"core_speed_ms": speed, "admitted_p50_ms": pct(holds, 50, "201"),
                           "admitted_p99_ms": pct(holds, 99, "201"), "every_answer_p99_ms": pct(holds, 99),
                           "bare_p50_ms": pct(bare, 50), "bare_p99_ms": pct(bare, 99),
                           "bare_at_own_70_p99_ms": pct(own, 99), "admitted": holds.codes.get("201", 0),
                           "ratio": round(pct(holds, 99, "201") / max(pct(bare, 99), 1e-3), 2),
                           "ratio_at_own_70": round(pct(holds, 99, "201") / max(pct(own, 99), 1e-3), 2)})
    fastest = min(r["core_speed_ms"] for r in rounds)
    for r in rounds:
        r["disturbed"] = r["core_speed_ms"] > DISTURBED * fastest
    for sid in sids:
        if await double_holds(conn, sid):
            raise AssertionError(f"showtime {sid}: a seat held twice")
    await forget_events(conn, sids)
    return rounds


def report_rounds(rounds: list[dict], rate: float, bare_rate: float) -> None:
    print(f"\n== latency goal: admitted holds' p99 at 70 % of gate-on capacity ({rate:.0f} req/s offered, open loop) "
          f"beside the bare endpoint's p99 at the same rate, and at 70 % of its own capacity ({bare_rate:.0f} req/s); "
          f"{len(rounds)} interleaved rounds")
    for n, r in enumerate(rounds, 1):
        print(f"  round {n}: admitted holds p50 {r['admitted_p50_ms']:6.1f} ms p99 {r['admitted_p99_ms']:7.1f} ms "
              f"({r['admitted']} admitted; every answer p99 {r['every_answer_p99_ms']:.1f} ms); bare p50 "
              f"{r['bare_p50_ms']:6.1f} ms p99 {r['bare_p99_ms']:7.1f} ms; ratio {r['ratio']:5.2f}; bare at 70 % of "
              f"its own capacity p99 {r['bare_at_own_70_p99_ms']:.1f} ms (admitted / it {r['ratio_at_own_70']:.2f}); "
              f"core speed {r['core_speed_ms']:.0f} ms"
              + ("  DISTURBED (the host slowed the cores)" if r["disturbed"] else ""))
    calm = [r["ratio"] for r in rounds if not r["disturbed"]]
    print(f"  admitted p99 / bare p99: median {statistics.median(r['ratio'] for r in rounds):.2f} over every round"
          + (f", {statistics.median(calm):.2f} over the {len(calm)} undisturbed" if calm else "")
          + " (goal <= 2); against the bare endpoint at 70 % of its own capacity: median "
          f"{statistics.median(r['ratio_at_own_70'] for r in rounds):.2f}")


async def main() -> dict:
    probe_rate = float(os.environ.get("BENCH_PROBE_RATE", "5000"))
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    tokens = [issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer").encode()
              for _ in range(CUSTOMERS)]
    conn = await asyncpg.connect(DSN)
    service_env = {"HOLD_DATABASE_URL": DSN, "HOLD_TTL_SECONDS": "2", **UNLIMITED_HOLDS,
                   "LOG_LEVEL": "WARNING", "DB_POOL_MAX": "20", "APP_ENV": "dev"}
    factory = "hold_service.entrypoints.api.app:get_application"
    bare = await measure("bare FastAPI endpoint", "bare_app:get_application", {}, tokens, probe_rate,
                         None, conn, app_dir=str(Path(__file__).parent))
    gate_on = await measure("hold-service, gate ON", factory, {**service_env, "SEAT_GATE_ENABLED": "true"},
                            tokens, probe_rate, 0.7, conn, sweep=SWEEP)
    gate_off = await measure("hold-service, gate OFF", factory, {**service_env, "SEAT_GATE_ENABLED": "false"},
                             tokens, probe_rate, 0.7, conn)
    keyed = await keyed_refusals(conn, factory, {**service_env, "SEAT_GATE_ENABLED": "true"}, tokens)
    rate = gate_on["probe"].rate * 0.7
    bare_rate = bare["probe"].rate * 0.7
    rounds = await latency_rounds(conn, factory, {**service_env, "SEAT_GATE_ENABLED": "true"}, tokens, rate,
                                  bare_rate)
    await conn.close()
    base = bare["probe"].rate
    client = (f"wrk closed loop, 1 thread, {WRK_CONNECTIONS} connections" if shutil.which("wrk")
              else f"open-loop probe offered {probe_rate:.0f}/s (no wrk)")
    print(f"machine: {os.cpu_count()} cores; capacity: {client}; 70 % runs: open loop, {CONNECTIONS} "
          f"connections; {CUSTOMERS} customers, one 300-seat showtime per phase, HOLD_TTL_SECONDS=2")
    print(f"\n== bare FastAPI endpoint\ncapacity: {base:8.0f} responses/s "
          f"(p50 {pct(bare['probe'], 50):.1f} ms, p99 {pct(bare['probe'], 99):.1f} ms at saturation)")
    report(gate_on, base)
    report(gate_off, base)
    print(f"\n== keyed holds the gate refuses (Idempotency-Key claimed, refusal stored)\ncapacity: {keyed.rate:8.0f} "
          f"responses/s = {keyed.rate / base:5.1%} of bare; answers {keyed.codes}")
    on, off = gate_on["probe"].rate, gate_off["probe"].rate
    print(f"\nratios: gate-on/bare {on / base:.2f}, gate-off/bare {off / base:.2f}, "
          f"gate-on/gate-off {on / off:.2f}")
    print("targets: holds/s >= 0.50 of bare; p99 of admitted holds < 100 ms at 70 %; zero double holds")
    if gate_on["sweep"]:
        print("gate ON, offered load sweep: " + "; ".join(
            f"{p['offered_per_s']}/s -> {p['answered_per_s']}/s p99 {p['p99_ms']:.0f} ms (admitted "
            f"{p['admitted_p99_ms']:.0f} ms)" for p in gate_on["sweep"]))
    report_rounds(rounds, rate, bare_rate)
    ratios = [r["ratio"] for r in rounds]
    return {"bare_per_s": round(base), "gate_on": figures(gate_on, base), "gate_off": figures(gate_off, base),
            "keyed_refused_per_s": round(keyed.rate), "keyed_refused_of_bare": round(keyed.rate / base, 3),
            "latency_rounds": {"offered_per_s": round(rate), "bare_own_70_offered_per_s": round(bare_rate),
                               "rounds": rounds,
                               "admitted_p99_of_bare_p99": statistics.median(ratios)}}


async def run_and_save() -> None:
    with Results("holds") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
