"""`make bench-vouchers`: a flash sale on ONE hot voucher, normal vs flash mode, interleaved in one run.

Starts the voucher API (2 uvicorn workers, free port, the TEST database), the worker's voucher-reserved
consumer and a bare FastAPI endpoint of the same shape (bare_app.py), then covers the whole sale:
1. before the limit: each mode for BENCH_SECONDS (10) at the same concurrency (each level of
   BENCH_CONCURRENCY, default "32,64,128"), normal then flash, with unique customers/orders (closed loop: a
   conservative ceiling, docs/reliability.md);
2. the moment the limit is reached: a voucher of BENCH_SALE_LIMIT (3000) uses driven past it at the middle
   level: 201s must equal the limit (no oversell), the rest are 409 OUT_OF_STOCK, nothing else;
3. the crowd after it: the same sold-out voucher for BENCH_SECONDS more in each mode, beside the bare endpoint
   answering the same 409 (the framework's ceiling);
4. PostgreSQL scarce: the test database's backends held to BENCH_PG_CPU (0.1) of a core (pg_cpu_limit: a cgroup's
   CPU quota, as when PostgreSQL's machine is busy with the rest of the sale), each mode at each level for
   BENCH_PG_ROUNDS (2) rounds, the order of the modes turning each round; the flash writer's catch-up after each run is
   printed beside it. Skipped, saying why, where no cgroup can be written.

Postgres writes per reservation come from pg_stat_database of the test database, read after the consumer has
caught up so flash mode's deferred writes are counted too: transactions committed (xact_commit, less the
benchmark's own polling) and rows written (tup_inserted + tup_updated + tup_deleted), each over the
reservations made.

Normal mode's limit is the hot row itself: after each level's two modes, pgbench runs the conditional UPDATE
of that row (tests/bench/pgbench/voucher_update.sql, as `make bench-limits` does: 16 clients, prepared,
synchronous commit) for as long, on a voucher of its own, with the API idle. Normal mode's req/s over that
round's tps is the figure that stands on a shared machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import asyncpg
from dotenv import dotenv_values

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "shared" / "src"))
from ticketing.auth import issue_token  # noqa: E402
from ticketing_testing import apply_migrations, free_port, shared_migrations, stop_process, test_dsn, wait_http_ok  # noqa: E402

LEVELS = [int(c) for c in os.environ.get("BENCH_CONCURRENCY", "32,64,128").split(",")]
sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from pg_cpu_limit import CpuLimit, available  # noqa: E402

DURATION = float(os.environ.get("BENCH_SECONDS", "10"))
MIGRATIONS = ROOT / "services/voucher-service/src/voucher_service/sql/migrations"
SALE_LIMIT = int(os.environ.get("BENCH_SALE_LIMIT", "3000"))
STATS_FLUSH_SECONDS = 11
PG_CPU = float(os.environ.get("BENCH_PG_CPU", "0.1"))
PG_ROUNDS = int(os.environ.get("BENCH_PG_ROUNDS", "2"))
COUNTERS = ("SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
            "WHERE datname = current_database()")


WRK_SCRIPT = """
-- Unique customers and orders per request (wrk's one thread; the run id keeps runs apart).
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. TOKEN
wrk.headers["Content-Type"] = "application/json"
local n = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {} end
function request()
  n = n + 1
  local body = string.format('{"customerId":%d,"orderId":"%s-%04x-4000-8000-%012x","orderAmount":1000}',
                             RUN * 10000000 + n, RUN_HEX, math.floor(n / 281474976710656) % 65536,
                             n % 281474976710656)
  return wrk.format(nil, PATH, nil, body)
end
function response(status, headers, body)
  local k = tostring(status)
  counts[k] = (counts[k] or 0) + 1
end
function done(summary, latency, requests)
  io.write("COUNTS")
  for k, v in pairs(threads[1]:get("counts")) do io.write(" " .. k .. "=" .. v) end
  io.write(string.format("\\nSUMMARY %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.connect + summary.errors.read
    + summary.errors.write + summary.errors.timeout))
end
"""


class Run(NamedTuple):
    codes: dict[str, int]  # answers by status
    errors: int  # connect, read, write errors and timeouts
    p50: float
    p99: float
    seconds: float

    def count(self, status: str) -> int:
        return self.codes.get(status, 0)

    @property
    def answers(self) -> int:
        return sum(self.codes.values()) + self.errors


def drive(base: str, token: str, code: str, concurrency: int, path: str | None = None) -> Run:
    """wrk, closed loop at `concurrency` connections, for BENCH_SECONDS.

    A C load generator: a Python one on the same 2 cores eats the CPU it measures (flash mode most).
    """
    run = int(time.time() * 1000) % 1_000_000 + concurrency
    prelude = (f'TOKEN = "{token}"\nPATH = "{path or f"/vouchers/{code}/reservations"}"\nRUN = {run}\n'
               f'RUN_HEX = "{uuid.uuid4().hex[:8]}"\n')
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(prelude + WRK_SCRIPT)
        script.flush()
        out = subprocess.run(["wrk", "-t1", f"-c{concurrency}", f"-d{round(DURATION)}s", "--timeout", "10s",
                              "-s", script.name, base], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"wrk failed: {out.stderr or out.stdout}")
    codes: dict[str, int] = {}
    summary = None
    for line in out.stdout.splitlines():
        if line.startswith("COUNTS"):
            codes = {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
        elif line.startswith("SUMMARY"):
            summary = list(map(int, line.split()[1:]))
    if summary is None:
        raise RuntimeError(f"wrk printed no summary: {out.stdout}")
    _, duration_us, p50, p99, errors = summary
    return Run(codes, errors, p50 / 1000, p99 / 1000, duration_us / 1e6)


def cpu_seconds(root: int) -> float:
    """utime + stime of a process and its descendants (the uvicorn workers), from /proc. CPU per request
    is the figure that survives a noisy shared machine; req/s and latency do not."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def infrastructure_cpu(database: str) -> dict[str, dict[int, float]]:
    """CPU seconds so far of what a reservation costs outside the API and the writer, by part, per process:
    the Kafka broker, Redis, and the Postgres backends of the test database with the WAL writer. The same
    two cores run them all, so a mode's cost on this machine is their sum (docs/benchmarks.md, vouchers)."""
    parts: dict[str, dict[int, float]] = {"kafka": {}, "redis": {}, "postgres": {}}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        part = ("kafka" if "kafka.Kafka" in cmdline else "redis" if cmdline.startswith("redis-server")
                else "postgres" if cmdline.startswith("postgres:") and (f" {database} " in cmdline
                                                                       or "walwriter" in cmdline) else None)
        if part:
            parts[part][int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return parts


def cpu_spent(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """Seconds per part between two readings (a process that started meanwhile counts from zero)."""
    return {part: sum(t - before[part].get(pid, 0.0) for pid, t in pids.items()) for part, pids in after.items()}


class Writes:
    """Postgres' transactions and rows written in the test database between two readings; each query of the
    benchmark's own connection is one transaction of its own (autocommit), taken off."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn, self.own = conn, 0

    async def read(self) -> tuple[int, int]:
        self.own += 1
        xacts, rows = await self.conn.fetchrow(COUNTERS)
        return int(xacts) - self.own, int(rows)

    async def settle(self, code: str, expected: int, timeout: float = 90) -> tuple[int, float]:
        """Wait for the consumer to write every reservation; returns (used_count, seconds it took)."""
        started = time.monotonic()
        used = -1
        while time.monotonic() < started + timeout:
            self.own += 1
            used = await self.conn.fetchval("SELECT used_count FROM voucher WHERE code = $1", code)
            if used >= expected:
                break
            await asyncio.sleep(0.1)
        lag = time.monotonic() - started
        # A backend flushes its statistics at most once a second, and one that goes idle within that second
        # only after PGSTAT_IDLE_INTERVAL (10 s): read sooner, the API's last transactions of one run are
        # counted in the next one's.
        await asyncio.sleep(STATS_FLUSH_SECONDS)
        return int(used), lag


async def create_voucher(base: str, admin: str, flash: bool, limit: int = 10_000_000) -> str:
    code = f"BENCH{'F' if flash else 'N'}{uuid.uuid4().hex[:10].upper()}"
    now = datetime.now(UTC)
    body = {"code": code, "discountAmount": 100, "minOrderAmount": 0, "totalLimit": limit,
            "perUserLimit": 1, "startsAt": (now - timedelta(hours=1)).isoformat(),
            "endsAt": (now + timedelta(hours=2)).isoformat(), "flashSale": flash}
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {admin}"}) as s, \
            s.post(f"{base}/admin/vouchers", json=body) as resp:
        assert resp.status == 201, await resp.text()
    return code


async def hot_row(conn: asyncpg.Connection) -> str:
    """A voucher for pgbench alone: its counter moves with no redemption behind it."""
    code = f"LIMITS{uuid.uuid4().hex[:8].upper()}"
    await conn.execute("INSERT INTO voucher (code, discount_amount, min_order_amount, total_limit, per_user_limit, "
                       "starts_at, ends_at, flash_sale) VALUES ($1, 100, 0, 2000000000, 1, now() - interval '1 hour', "
                       "now() + interval '2 hours', false)", code)
    return code


class Measured:
    """One wrk run against the API, with the CPU and the Postgres writes it cost."""

    def __init__(self, writes: Writes, api_pid: int, worker_pid: int, database: str) -> None:
        self.writes, self.api_pid, self.worker_pid, self.database = writes, api_pid, worker_pid, database

    async def run(self, base: str, token: str, code: str, concurrency: int, expected: int | None = None,
                  path: str | None = None) -> dict[str, Any]:
        """`expected`: the used_count to wait for (None: the 201s of this run)."""
        xacts, rows = await self.writes.read()
        api_cpu, writer_cpu = cpu_seconds(self.api_pid), cpu_seconds(self.worker_pid)
        infra = infrastructure_cpu(self.database)
        run = await asyncio.to_thread(drive, base, token, code, concurrency, path)
        api_cpu = cpu_seconds(self.api_pid) - api_cpu
        used, lag = (await self.writes.settle(code, run.count("201") if expected is None else expected)
                     if path is None else (0, 0.0))
        writer_cpu = cpu_seconds(self.worker_pid) - writer_cpu
        spent = cpu_spent(infra, infrastructure_cpu(self.database))
        xacts_after, rows_after = await self.writes.read()
        made = max(run.count("201"), 1)
        per_answer = 1000 / max(run.answers, 1)
        return {"run": run, "used": used, "lag": lag, "api_cpu_ms": api_cpu * per_answer,
                "writer_cpu_ms": writer_cpu * per_answer,
                "infra_cpu_ms": {part: round(t * per_answer, 3) for part, t in spent.items()},
                "xacts_per_reservation": (xacts_after - xacts) / made,
                "xacts_per_answer": (xacts_after - xacts) / max(run.answers, 1),
                "rows_per_reservation": (rows_after - rows) / made}


async def bench(base: str, bare: str, dsn: str, secret: str, api_pid: int,
                worker_pid: int) -> dict[str, Any]:
    admin = issue_token(secret, sub="1", role="admin")
    service = issue_token(secret, sub="2", role="service")
    conn = await asyncpg.connect(dsn)
    measured = Measured(Writes(conn), api_pid, worker_pid, await conn.fetchval("SELECT current_database()"))
    print(f"one hot voucher per mode and level, {DURATION:.0f} s each, API on 2 uvicorn workers; load: wrk, "
          f"closed loop, 1 thread, one connection per unit of concurrency")
    points = await before_the_limit(measured, conn, dsn, base, admin, service)
    sale = await through_the_limit(measured, base, bare, admin, service)
    scarce = await postgres_scarce(measured, base, admin, service)
    await conn.close()
    return {"points": points, "sale": sale, "postgres_scarce": scarce}


async def before_the_limit(measured: Measured, conn: asyncpg.Connection, dsn: str, base: str, admin: str,
                           service: str) -> list[dict[str, Any]]:
    from bench_limits import pgbench

    print("1. before the limit (a voucher of 10,000,000 uses)")
    print(f"{'conc':>4} {'mode':7} {'ok':>7} {'err':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'pg xacts/res':>13} {'pg rows/res':>12} {'API cpu ms/req':>15} {'writer cpu ms/req':>18}")
    points: list[dict[str, Any]] = []
    for concurrency in LEVELS:
        results = {}
        for mode in ("normal", "flash"):
            code = await create_voucher(base, admin, mode == "flash")
            await asyncio.sleep(1.5)
            m = await measured.run(base, service, code, concurrency)
            run: Run = m["run"]
            ok, others = run.count("201"), run.answers - run.count("201")
            results[mode] = ok / run.seconds
            points.append({"mode": mode, "concurrency": concurrency, "req_per_s": round(ok / run.seconds),
                           "p50_ms": run.p50, "p99_ms": run.p99, "errors": others,
                           "pg_xacts_per_reservation": round(m["xacts_per_reservation"], 3),
                           "pg_rows_per_reservation": round(m["rows_per_reservation"], 2),
                           "api_cpu_ms_per_request": round(m["api_cpu_ms"], 3),
                           "writer_cpu_ms_per_request": round(m["writer_cpu_ms"], 3),
                           "infra_cpu_ms_per_request": m["infra_cpu_ms"]})
            print(f"{concurrency:4d} {mode:7} {ok:7d} {others:5d} {ok / run.seconds:8.0f} {run.p50:8.1f} "
                  f"{run.p99:8.1f} {m['xacts_per_reservation']:13.3f} {m['rows_per_reservation']:12.2f} "
                  f"{m['api_cpu_ms']:15.2f} {m['writer_cpu_ms']:18.2f}   "
                  f"(used_count {m['used']}; Postgres caught up {m['lag']:.1f} s after the load; cpu ms/req "
                  f"{', '.join(f'{k} {v:.2f}' for k, v in m['infra_cpu_ms'].items())})")
        limit = (await asyncio.to_thread(pgbench, dsn, "voucher_update.sql", {"code": await hot_row(conn)},
                                         DURATION))["tps"]
        next(p for p in points if p["mode"] == "normal" and p["concurrency"] == concurrency)[
            "pgbench_hot_row_tps"] = limit
        ratio = results["flash"] / max(results["normal"], 1e-9)
        next(p for p in points if p["mode"] == "flash" and p["concurrency"] == concurrency)[
            "of_normal"] = round(ratio, 2)
        print(f"     flash / normal throughput at concurrency {concurrency}: {ratio:.2f}x; pgbench hot row (16 "
              f"clients, same {DURATION:.0f} s, API idle): {limit:,} tps, normal / pgbench "
              f"{results['normal'] / limit:.2f}")
    return points


async def through_the_limit(measured: Measured, base: str, bare: str, admin: str,
                            service: str) -> dict[str, Any]:
    """The moment the limit is reached and the crowd after it, each mode, then the bare endpoint."""
    concurrency = LEVELS[len(LEVELS) // 2]
    print(f"2. through the limit ({SALE_LIMIT:,} uses) and 3. the crowd after it, concurrency {concurrency}")
    print(f"{'':18} {'201':>6} {'409':>7} {'other':>6} {'answers/s':>10} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'pg xacts/answer':>16} {'API cpu ms/req':>15}")
    sale: dict[str, Any] = {"limit": SALE_LIMIT, "concurrency": concurrency}
    for mode in ("normal", "flash"):
        code = await create_voucher(base, admin, mode == "flash", limit=SALE_LIMIT)
        await asyncio.sleep(1.5)
        for phase in ("through", "after"):
            m = await measured.run(base, service, code, concurrency, expected=SALE_LIMIT)
            sale[f"{mode}_{phase}"] = _sale_line(f"{mode} {phase}", m)
            if phase == "through":
                sale[f"{mode}_used_count"] = m["used"]
    m = await measured.run(bare, service, "BARE", concurrency, path="/vouchers/BARE/reservations")
    sale["bare"] = _sale_line("bare endpoint", m)
    for mode in ("normal", "flash"):
        print(f"     {mode}: used_count {sale[f'{mode}_used_count']} of {SALE_LIMIT} (oversell "
              f"{max(0, sale[f'{mode}_used_count'] - SALE_LIMIT)}); sold-out answers/s "
              f"{sale[f'{mode}_after']['answers_per_s']:,} = "
              f"{sale[f'{mode}_after']['answers_per_s'] / max(sale['bare']['answers_per_s'], 1):.0%} of bare")
    return sale


async def postgres_scarce(measured: Measured, base: str, admin: str, service: str) -> dict[str, Any]:
    """Each mode at each level with the database's backends held to PG_CPU of a core, over PG_ROUNDS rounds, the
    order of the modes turning each round."""
    print(f"4. PostgreSQL scarce: this database's backends held to {PG_CPU} of a core")
    if (why := available()) is not None:
        print(f"     not measured: {why}")
        return {"measured": False, "why": why}
    print(f"{'round':>5} {'conc':>4} {'mode':7} {'ok':>7} {'err':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'PostgreSQL caught up':>21}")
    points: list[dict[str, Any]] = []
    for n in range(PG_ROUNDS):
        for concurrency in LEVELS:
            figures: dict[str, Any] = {"round": n + 1, "concurrency": concurrency}
            for mode in ("normal", "flash") if n % 2 == 0 else ("flash", "normal"):
                code = await create_voucher(base, admin, mode == "flash")
                await asyncio.sleep(1.5)
                with CpuLimit(measured.database, PG_CPU):
                    m = await measured.run(base, service, code, concurrency)
                run: Run = m["run"]
                ok = run.count("201")
                figures[mode] = {"req_per_s": round(ok / run.seconds), "p50_ms": run.p50, "p99_ms": run.p99,
                                 "errors": run.answers - ok, "caught_up_s": round(m["lag"], 1)}
                print(f"{n + 1:5d} {concurrency:4d} {mode:7} {ok:7d} {run.answers - ok:5d} {ok / run.seconds:8.0f} "
                      f"{run.p50:8.1f} {run.p99:8.1f} {m['lag']:19.1f} s")
            figures["flash_of_normal"] = round(figures["flash"]["req_per_s"] / max(figures["normal"]["req_per_s"], 1),
                                               2)
            print(f"           flash / normal: {figures['flash_of_normal']:.2f}x")
            points.append(figures)
    return {"measured": True, "cores": PG_CPU, "points": points}


def _sale_line(label: str, m: dict[str, Any]) -> dict[str, Any]:
    run: Run = m["run"]
    others = run.answers - run.count("201") - run.count("409")
    line = {"created": run.count("201"), "out_of_stock": run.count("409"), "other": others,
            "answers_per_s": round(run.answers / run.seconds), "p50_ms": run.p50, "p99_ms": run.p99,
            "pg_xacts_per_answer": round(m["xacts_per_answer"], 3), "api_cpu_ms_per_request": round(m["api_cpu_ms"], 3)}
    print(f"{label:18} {line['created']:6d} {line['out_of_stock']:7d} {others:6d} {line['answers_per_s']:10,} "
          f"{run.p50:8.1f} {run.p99:8.1f} {m['xacts_per_answer']:16.3f} {m['api_cpu_ms']:15.2f}")
    return line


def main() -> int:
    env = {**{k: v for k, v in dotenv_values(ROOT / ".env").items() if v is not None}, **os.environ}
    dsn = test_dsn(env["VOUCHER_DATABASE_URL"])
    apply_migrations(dsn, shared_migrations(), MIGRATIONS)
    port = free_port()
    child_env = {**env, "VOUCHER_DATABASE_URL": dsn, "KAFKA_GROUP_PREFIX": "vtest-",
                 "LOG_LEVEL": "WARNING", "DB_POOL_MAX": "20", "RECONCILE_INTERVAL_SECONDS": "3600"}
    py = str(ROOT / ".venv/bin/python")
    logs = open(ROOT / "var" / "bench_vouchers.log", "ab")
    app = "voucher_service.entrypoints.api.app:get_application"
    api = subprocess.Popen([py, "-m", "uvicorn", "--factory", app,
                            "--host", "127.0.0.1", "--port", str(port), "--workers", "2", "--no-access-log",
                            "--log-level", "warning"], env=child_env, cwd=ROOT, stdout=logs, stderr=logs)
    worker = subprocess.Popen([py, "-m", "voucher_service.entrypoints.worker", "--roles",
                               "reserved-consumer"], env=child_env, cwd=ROOT, stdout=logs, stderr=logs)
    bare_port = free_port()
    bare = subprocess.Popen([py, "-m", "uvicorn", "--factory", "bare_app:get_application", "--app-dir",
                             str(Path(__file__).parent), "--host", "127.0.0.1", "--port", str(bare_port),
                             "--workers", "2", "--no-access-log", "--log-level", "warning"],
                            env=child_env, cwd=ROOT, stdout=logs, stderr=logs)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/readyz", 60, api)
        wait_http_ok(f"http://127.0.0.1:{bare_port}/healthz", 60, bare)
        from results import Results

        with Results("vouchers") as r:
            r.data.update(asyncio.run(bench(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{bare_port}", dsn,
                                            env["JWT_SECRET"], api.pid, worker.pid)))
            points = r.data["points"]
            ratios = [p["req_per_s"] / p["pgbench_hot_row_tps"] for p in points if "pgbench_hot_row_tps" in p]
            r.data["normal_of_hot_row"] = round(max(ratios), 3)
        flash = {p["concurrency"]: p for p in points if p["mode"] == "flash"}
        by_level = ", ".join(f"{c}: {p['of_normal']:.2f}x" for c, p in flash.items())
        print(f"flash / normal before the limit, by level: {by_level}; flash Postgres transactions "
              f"per reservation {max(p['pg_xacts_per_reservation'] for p in flash.values()):.3f} at most")
        scarce = r.data["postgres_scarce"]
        if scarce["measured"]:
            each = [f"round {x['round']} at {x['concurrency']}: {x['flash_of_normal']:.2f}x" for x in scarce["points"]]
            print(f"flash / normal with PostgreSQL held to {scarce['cores']} of a core: {', '.join(each)}")
        print(f"normal mode / pgbench hot row, same run: best {max(ratios):.2f} "
              f"(by level {', '.join(f'{x:.2f}' for x in ratios)}); load average before/after {r.data['load_before']}"
              f" / {r.data['load_after']}; core speed (ms for a fixed loop) {r.data['cpu_speed_before']['median_ms']}"
              f" / {r.data['cpu_speed_after']['median_ms']}")
    finally:
        for proc in (api, worker, bare):
            stop_process(proc)
        logs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
