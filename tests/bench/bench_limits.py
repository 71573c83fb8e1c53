"""make bench-limits: the machine's own limits, measured in the same run as our figures (report.py sets
each of our figures beside the limit it cannot beat):

- bare endpoint: a FastAPI endpoint of the same shape as POST holds (bare_app.py), 2 uvicorn workers, wrk
  closed loop: the framework's ceiling on these cores;
- redis-benchmark running our gate script (hold-service adapters/lua/try_hold.lua, one two-seat request per
  call, unpipelined, 50 connections): the ceiling of any request the gate answers;
- pgbench running our conditional hold UPDATE over one showtime's 300 seats and the hot voucher row update
  (pgbench/*.sql, the statements of sql/holds.sql and vouchers.sql; prepared, synchronous commit, 16
  clients): the ceilings of a hold Postgres writes and of a normal-mode voucher use;
- the Kafka producer alone (aiokafka, idempotent, as the relay's): the ceiling of the outbox relay.

Writes var/bench/limits.json. Redis keys are the gate's own shape under a hash tag of their own and expire
in 2 s; the Postgres rows are in the test database (a showtime and a voucher of their own).
"""

from __future__ import annotations

import asyncio
import random
import re
import shutil
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import orjson
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from bench_holds import requests_for, server, wrk_capacity
from results import Results
from ticketing.kafka import idempotent_producer
from ticketing_testing import apply_migrations, env, shared_migrations, test_dsn

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
GATE_SCRIPT = ROOT / "services/hold-service/src/hold_service/adapters/lua/try_hold.lua"
HOLD_MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
VOUCHER_MIGRATIONS = ROOT / "services/voucher-service/src/voucher_service/sql/migrations"
SECONDS = 8
PG_CLIENTS = 16
KAFKA_MESSAGES = 40_000


def bare_endpoint() -> dict[str, float]:
    with ExitStack() as stack:
        port = server(stack, "bare_app:get_application", {}, app_dir=str(HERE))
        stats = wrk_capacity(port, requests_for(1, [b"x"], 1), SECONDS)
    return {"req_per_s": round(stats.rate), "p50_ms": stats.hist.get_value_at_percentile(0) / 1000,
            "p99_ms": stats.hist.get_max_value() / 1000}


def gate_command(sha: str, tag: str) -> list[str]:
    """One two-seat hold per call, as one request of the gate's batch with the waiting room off (the gate's mark
    and the room's two keys named, no slot); redis-benchmark puts a new random number in place of each
    __rand_int__ (seats of a 300-seat showtime; a hold id; a customer). tests/bench/test_bench_limits.py runs it
    against the script."""
    return ["EVALSHA", sha, "5", f"seat:{{{tag}}}:__rand_int__", f"seat:{{{tag}}}:__rand_int__",
            f"seatgate:{{{tag}}}:loaded", f"wr:{{{tag}}}:active", f"wr:{{{tag}}}:state", "2000", "2",
            "hold-__rand_int__", "__rand_int__", ""]


def redis_gate() -> dict[str, float]:
    url = env("REDIS_URL", "redis://127.0.0.1:6379/0")
    host, port = re.match(r"redis://([^:/]+):?(\d+)?", url).groups()  # type: ignore[union-attr]
    cli = ["-h", host, "-p", port or "6379"]
    sha = subprocess.run(["redis-cli", *cli, "SCRIPT", "LOAD", GATE_SCRIPT.read_text()], capture_output=True,
                         text=True, check=True).stdout.strip()
    command = gate_command(sha, f"limits{uuid.uuid4().hex[:6]}")
    out = subprocess.run(["redis-benchmark", *cli, "-c", "50", "-n", "300000", "-r", "300", "-q", "--csv",
                          *command], capture_output=True, text=True, check=True).stdout
    rows = [line.split('","') for line in out.splitlines() if line.startswith('"') and "rps" not in line]
    rps = float(rows[-1][1].strip('"'))
    p50 = float(rows[-1][4].strip('"')) if len(rows[-1]) > 4 else 0.0
    p99 = float(rows[-1][6].strip('"')) if len(rows[-1]) > 6 else 0.0
    return {"calls_per_s": round(rps), "p50_ms": p50, "p99_ms": p99, "connections": 50, "pipelined": 1}


def pgbench(dsn: str, script: str, variables: dict[str, str], seconds: float = SECONDS) -> dict[str, float]:
    defines = [f"-D{k}={v}" for k, v in variables.items()]
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(PG_CLIENTS), "-j", "2",
                          "-T", str(round(seconds)), "-f", str(HERE / "pgbench" / script), *defines, dsn],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"pgbench {script} failed: {out.stderr[-2000:]}")
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out.stdout)
    latency = re.search(r"latency average = ([\d.]+) ms", out.stdout)
    assert tps is not None, out.stdout
    return {"tps": round(float(tps.group(1))), "latency_avg_ms": float(latency.group(1)) if latency else 0.0,
            "clients": PG_CLIENTS}


async def pg_rows(hold_dsn: str, voucher_dsn: str) -> tuple[int, str]:
    """A showtime of 300 seats S1..S300 and a voucher with no practical limit, both for these runs only."""
    sid = random.randint(10**15, 2**52)
    conn = await asyncpg.connect(hold_dsn)
    try:
        await conn.execute("INSERT INTO showtime (showtime_id, title, starts_at, price_cents, prices) "
                           "VALUES ($1, 'limits', now() + interval '1 day', 1000, "
                           "'{\"STANDARD\": {\"ADULT\": 1000}}')", sid)
        await conn.execute("INSERT INTO show_seat (showtime_id, seat_code, row_name, x) SELECT $1, 'S' || n, 'S', n "
                           "FROM generate_series(1, 300) n", sid)
    finally:
        await conn.close()
    code = f"LIMITS{uuid.uuid4().hex[:8].upper()}"
    now = datetime.now(UTC)
    conn = await asyncpg.connect(voucher_dsn)
    try:
        await conn.execute("INSERT INTO voucher (code, discount_amount, min_order_amount, total_limit, per_user_limit, "
                           "starts_at, ends_at, flash_sale) VALUES ($1, 100, 0, 2000000000, 1, $2, $3, false)",
                           code, now - timedelta(hours=1), now + timedelta(hours=2))
    finally:
        await conn.close()
    return sid, code


async def kafka_producer() -> dict[str, float]:
    bootstrap = env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    topic = f"bench-limits-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])
        producer = idempotent_producer(bootstrap, client_id="bench-limits")
        await producer.start()
        try:
            value = orjson.dumps({"eventId": str(uuid.uuid4()), "type": "SeatsHeld", "data": {"x": "y" * 400}})
            await (await producer.send(topic, value, key=b"warm-up"))
            started = time.perf_counter()
            sent = [await producer.send(topic, value, key=f"b{i % 500}".encode()) for i in range(KAFKA_MESSAGES)]
            await asyncio.gather(*sent)
            rate = KAFKA_MESSAGES / (time.perf_counter() - started)
        finally:
            await producer.stop()
        await admin.delete_topics([topic])
    finally:
        await admin.close()
    return {"messages_per_s": round(rate), "message_bytes": len(value), "partitions": 6}


def main() -> int:
    hold_dsn, voucher_dsn = test_dsn(env("HOLD_DATABASE_URL")), test_dsn(env("VOUCHER_DATABASE_URL"))
    apply_migrations(hold_dsn, shared_migrations(), HOLD_MIGRATIONS)
    apply_migrations(voucher_dsn, shared_migrations(), VOUCHER_MIGRATIONS)
    missing = [tool for tool in ("wrk", "redis-benchmark", "pgbench") if not shutil.which(tool)]
    if missing:
        print(f"missing {missing}: make bench-tools limit-tools", file=sys.stderr)
        return 1
    with Results("limits") as r:
        r.data["bare_endpoint"] = bare_endpoint()
        print(f"bare FastAPI endpoint (2 workers, wrk 64 connections): {r.data['bare_endpoint']['req_per_s']:,} req/s")
        r.data["redis_gate_script"] = redis_gate()
        print(f"redis-benchmark, gate script try_hold.lua (2 seats a call, 50 connections, unpipelined): "
              f"{r.data['redis_gate_script']['calls_per_s']:,} calls/s")
        sid, code = asyncio.run(pg_rows(hold_dsn, voucher_dsn))
        r.data["pg_hold_update"] = pgbench(hold_dsn, "hold_update.sql", {"sid": str(sid)})
        print(f"pgbench, conditional hold UPDATE over 300 seats ({PG_CLIENTS} clients): "
              f"{r.data['pg_hold_update']['tps']:,} tps")
        r.data["pg_voucher_row"] = pgbench(voucher_dsn, "voucher_update.sql", {"code": code})
        print(f"pgbench, hot voucher row UPDATE ({PG_CLIENTS} clients, one row): "
              f"{r.data['pg_voucher_row']['tps']:,} tps")
        r.data["kafka_producer"] = asyncio.run(kafka_producer())
        print(f"Kafka producer alone (idempotent, {KAFKA_MESSAGES:,} messages of "
              f"{r.data['kafka_producer']['message_bytes']} B): {r.data['kafka_producer']['messages_per_s']:,} msg/s")
        print(f"load average before/after: {r.data['load_before']} / {r.data.get('load_after', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
