"""`make bench-vouchers`: reserve throughput and latency on ONE hot voucher, normal vs flash mode.

Starts the voucher API (2 uvicorn workers, free port, the TEST database) and the worker's
voucher-reserved consumer, then drives each mode for BENCH_SECONDS (10) at the same concurrency (each level of
BENCH_CONCURRENCY, default "32,128") with
unique customers/orders (closed loop: a conservative ceiling, see RELIABILITY.md). Postgres writes per
request come from pg_stat_user_tables of the voucher schema (n_tup_ins + n_tup_upd), read after the
consumer has caught up so flash mode's deferred writes are counted too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
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

LEVELS = [int(c) for c in os.environ.get("BENCH_CONCURRENCY", "32,128").split(",")]
DURATION = float(os.environ.get("BENCH_SECONDS", "10"))
MIGRATIONS = ROOT / "services/voucher-service/src/voucher_service/sql/migrations"
WRITES = ("SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables "
          "WHERE schemaname = current_schema()")


async def drive(base: str, token: str, code: str, concurrency: int) -> tuple[int, int, list[float], float]:
    latencies: list[float] = []
    ok = errors = 0
    deadline = time.monotonic() + DURATION
    headers = {"Authorization": f"Bearer {token}"}

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal ok, errors
        while time.monotonic() < deadline:
            body = {"customerId": uuid.uuid4().int % 10**12 + 1, "orderId": str(uuid.uuid4()),
                    "orderAmount": 1000}
            start = time.perf_counter()
            async with session.post(f"{base}/vouchers/{code}/reservations", json=body) as resp:
                await resp.read()
                latencies.append(time.perf_counter() - start)
                if resp.status == 201:
                    ok += 1
                else:
                    errors += 1
    started = time.monotonic()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(base_url=None, headers=headers, connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(concurrency)))
    return ok, errors, latencies, time.monotonic() - started


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


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else float("nan")


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


async def bench(base: str, dsn: str, secret: str, api_pid: int, worker_pid: int) -> None:
    admin = issue_token(secret, sub="1", role="admin")
    service = issue_token(secret, sub="2", role="service")
    conn = await asyncpg.connect(dsn)
    print(f"one hot voucher per mode and level, {DURATION:.0f} s each, API on 2 uvicorn workers, closed loop")
    print(f"{'conc':>4} {'mode':7} {'ok':>7} {'err':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'pg writes/req':>14} {'API cpu ms/req':>15} {'writer cpu ms/req':>18}")
    for concurrency in LEVELS:
        results = {}
        for mode in ("normal", "flash"):
            code = await create_voucher(base, admin, mode == "flash")
            await asyncio.sleep(1.5)
            writes_before = await conn.fetchval(WRITES)
            api_cpu, writer_cpu = cpu_seconds(api_pid), cpu_seconds(worker_pid)
            ok, errors, lat, elapsed = await drive(base, service, code, concurrency)
            api_cpu = cpu_seconds(api_pid) - api_cpu
            used, lag = await settle(conn, code, ok)
            writer_cpu = cpu_seconds(worker_pid) - writer_cpu
            writes = await conn.fetchval(WRITES) - writes_before
            per_req = 1000 / max(ok + errors, 1)
            results[mode] = ok / elapsed
            print(f"{concurrency:4d} {mode:7} {ok:7d} {errors:5d} {ok / elapsed:8.0f} {pct(lat, 50):8.1f} "
                  f"{pct(lat, 99):8.1f} {writes / max(ok + errors, 1):14.2f} {api_cpu * per_req:15.2f} "
                  f"{writer_cpu * per_req:18.2f}   "
                  f"(used_count {used}; Postgres caught up {lag:.1f} s after the load)")
        print(f"     flash / normal throughput at concurrency {concurrency}: "
              f"{results['flash'] / max(results['normal'], 1e-9):.1f}x")
    await conn.close()


def main() -> int:
    env = {k: v for k, v in dotenv_values(ROOT / ".env").items() if v is not None}
    dsn = test_dsn(os.environ.get("VOUCHER_DATABASE_URL") or env["VOUCHER_DATABASE_URL"])
    apply_migrations(dsn, shared_migrations(), MIGRATIONS)
    port = free_port()
    child_env = {**os.environ, **env, "VOUCHER_DATABASE_URL": dsn, "KAFKA_GROUP_PREFIX": "vtest-",
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
        asyncio.run(bench(f"http://127.0.0.1:{port}", dsn, env["JWT_SECRET"], api.pid, worker.pid))
    finally:
        for proc in (api, worker):
            stop_process(proc)
        logs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
