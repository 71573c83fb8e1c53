"""`make bench-vouchers`: reserve throughput and latency on ONE hot voucher, normal vs flash mode.

Starts the voucher API (2 uvicorn workers, free port, the TEST database) and the worker's
voucher-reserved consumer, then drives each mode for BENCH_SECONDS (10) at the same concurrency (each level of
BENCH_CONCURRENCY, default "32,64,128") with
unique customers/orders (closed loop: a conservative ceiling, docs/reliability.md). Postgres writes per
request come from pg_stat_user_tables of the voucher schema (n_tup_ins + n_tup_upd), read after the
consumer has caught up so flash mode's deferred writes are counted too.

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

import aiohttp
import asyncpg
from dotenv import dotenv_values

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "shared" / "src"))
from ticketing.auth import issue_token  # noqa: E402
from ticketing.testing import apply_migrations, free_port, shared_migrations, stop_process, test_dsn, wait_http_ok  # noqa: E402

LEVELS = [int(c) for c in os.environ.get("BENCH_CONCURRENCY", "32,64,128").split(",")]
sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
DURATION = float(os.environ.get("BENCH_SECONDS", "10"))
MIGRATIONS = ROOT / "services/voucher-service/src/voucher_service/sql/migrations"
WRITES = ("SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables "
          "WHERE schemaname = current_schema()")


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


def drive(base: str, token: str, code: str, concurrency: int) -> tuple[int, int, float, float, float]:
    """wrk, closed loop at `concurrency` connections: (created, other answers, p50 ms, p99 ms, seconds).

    A C load generator: a Python one on the same 2 cores eats the CPU it measures (flash mode most).
    """
    run = int(time.time() * 1000) % 1_000_000 + concurrency
    prelude = (f'TOKEN = "{token}"\nPATH = "/vouchers/{code}/reservations"\nRUN = {run}\n'
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
    created = codes.pop("201", 0)
    return created, sum(codes.values()) + errors, p50 / 1000, p99 / 1000, duration_us / 1e6


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


async def settle(conn: asyncpg.Connection, code: str, expected: int, timeout: float = 45) -> tuple[int, float]:
    """Wait for the consumer to write every reservation; returns (used_count, seconds it took)."""
    started = time.monotonic()
    used = -1
    while time.monotonic() < started + timeout:
        used = await conn.fetchval("SELECT used_count FROM voucher WHERE code = $1", code)
        if used >= expected:
            break
        await asyncio.sleep(0.1)
    lag = time.monotonic() - started
    await asyncio.sleep(1.5)  # pg_stat counters are flushed about once a second
    return int(used), lag


async def create_voucher(base: str, admin: str, flash: bool) -> str:
    code = f"BENCH{'F' if flash else 'N'}{uuid.uuid4().hex[:10].upper()}"
    now = datetime.now(UTC)
    body = {"code": code, "discountAmount": 100, "minOrderAmount": 0, "totalLimit": 10_000_000,
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


async def bench(base: str, dsn: str, secret: str, api_pid: int, worker_pid: int) -> list[dict[str, float | str]]:
    from bench_limits import pgbench

    admin = issue_token(secret, sub="1", role="admin")
    service = issue_token(secret, sub="2", role="service")
    conn = await asyncpg.connect(dsn)
    points: list[dict[str, float | str]] = []
    print(f"one hot voucher per mode and level, {DURATION:.0f} s each, API on 2 uvicorn workers; load: wrk, "
          f"closed loop, 1 thread, one connection per unit of concurrency")
    print(f"{'conc':>4} {'mode':7} {'ok':>7} {'err':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'pg writes/req':>14} {'API cpu ms/req':>15} {'writer cpu ms/req':>18}")
    for concurrency in LEVELS:
        results = {}
        for mode in ("normal", "flash"):
            code = await create_voucher(base, admin, mode == "flash")
            await asyncio.sleep(1.5)
            writes_before = await conn.fetchval(WRITES)
            api_cpu, writer_cpu = cpu_seconds(api_pid), cpu_seconds(worker_pid)
            ok, errors, p50, p99, elapsed = await asyncio.to_thread(drive, base, service, code, concurrency)
            api_cpu = cpu_seconds(api_pid) - api_cpu
            used, lag = await settle(conn, code, ok)
            writer_cpu = cpu_seconds(worker_pid) - writer_cpu
            writes = await conn.fetchval(WRITES) - writes_before
            per_req = 1000 / max(ok + errors, 1)
            results[mode] = ok / elapsed
            points.append({"mode": mode, "concurrency": concurrency, "req_per_s": round(ok / elapsed),
                           "p50_ms": p50, "p99_ms": p99, "errors": errors,
                           "pg_writes_per_request": round(writes / max(ok + errors, 1), 2)})
            print(f"{concurrency:4d} {mode:7} {ok:7d} {errors:5d} {ok / elapsed:8.0f} {p50:8.1f} "
                  f"{p99:8.1f} {writes / max(ok + errors, 1):14.2f} {api_cpu * per_req:15.2f} "
                  f"{writer_cpu * per_req:18.2f}   "
                  f"(used_count {used}; Postgres caught up {lag:.1f} s after the load)")
        limit = (await asyncio.to_thread(pgbench, dsn, "voucher_update.sql", {"code": await hot_row(conn)},
                                         DURATION))["tps"]
        next(p for p in points if p["mode"] == "normal" and p["concurrency"] == concurrency)[
            "pgbench_hot_row_tps"] = limit
        print(f"     flash / normal throughput at concurrency {concurrency}: "
              f"{results['flash'] / max(results['normal'], 1e-9):.1f}x; pgbench hot row (16 clients, same "
              f"{DURATION:.0f} s, API idle): {limit:,} tps, normal / pgbench {results['normal'] / limit:.2f}")
    await conn.close()
    return points


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
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/readyz", 60, api)
        from results import Results

        with Results("vouchers") as r:
            r.data["points"] = points = asyncio.run(bench(f"http://127.0.0.1:{port}", dsn, env["JWT_SECRET"],
                                                          api.pid, worker.pid))
            ratios = [p["req_per_s"] / p["pgbench_hot_row_tps"] for p in points if "pgbench_hot_row_tps" in p]
            r.data["normal_of_hot_row"] = round(max(ratios), 3)
        print(f"normal mode / pgbench hot row, same run: best {max(ratios):.2f} "
              f"(by level {', '.join(f'{x:.2f}' for x in ratios)}); load average before/after {r.data['load_before']}"
              f" / {r.data['load_after']}; core speed (ms for a fixed loop) {r.data['cpu_speed_before']['median_ms']}"
              f" / {r.data['cpu_speed_after']['median_ms']}")
    finally:
        for proc in (api, worker):
            stop_process(proc)
        logs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
