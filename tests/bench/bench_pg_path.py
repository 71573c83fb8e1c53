"""make bench-pg-path: holds/s on each way to PostgreSQL, in one run: the single server (`make up`'s), a
Patroni cluster's primary reached directly, the same through HAProxy following Patroni (cluster mode's path), and
the single server with asyncpg's statement cache off (what a transaction-mode PgBouncer older than 1.21 needs).

The Patroni cluster is cluster mode's (deploy/local/cluster.sh pg-up: three nodes, synchronous mode, etcd,
HAProxy) on ports and a directory of its own, stopped at the end. One hold-service instance (one uvicorn worker)
per path, the seat gate off (every hold attempt a PostgreSQL transaction), all running for the whole run;
capacity is wrk's closed loop (bench_holds.wrk_capacity), the median of ROUNDS probes per path taken in
interleaved rounds. A synchronous commit waits for a standby's flush, and on
one machine the three nodes and the balancer share the cores with the service: the ratios are an upper bound
of the cost, not a network's figure.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import uvloop
from bench_cluster import FACTORY, uvicorn
from bench_holds import CUSTOMERS, DSN, MIGRATIONS, PROBE_SECONDS, SECRET, new_showtime, requests_for, wrk_capacity
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, shared_migrations
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = int(os.environ.get("BENCH_PG_PATH_ROUNDS", "5"))
PORT = int(os.environ.get("BENCH_PG_PATH_PORT", "7600"))  # the Patroni cluster's CLUSTER_PORT
DATABASE = "ticketing_bench_pg"
CLUSTER = {**os.environ, "CLUSTER_DIR": str(ROOT / "var" / "bench-pg-path"), "CLUSTER_PORT": str(PORT),
           "CLUSTER_DATABASE": DATABASE, "CLUSTER_FRESH": "1"}


def cluster(*args: str) -> str:
    return subprocess.run([str(ROOT / "deploy/local/cluster.sh"), *args], env=CLUSTER, check=True,
                          capture_output=True, text=True, timeout=600).stdout.strip()


def at(dsn: str, port: int) -> str:
    """The DSN's role and password on 127.0.0.1:port, the bench's database."""
    return dsn.rsplit("@", 1)[0] + f"@127.0.0.1:{port}/{DATABASE}"


async def main() -> dict:
    if not shutil.which("wrk"):
        raise SystemExit("bench-pg-path needs wrk (make bench-pg-path installs it)")
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    tokens = [issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer").encode()
              for _ in range(CUSTOMERS)]
    # The gate off: every attempt is a PostgreSQL transaction (with it on, most are refused in Redis).
    env = {"HOLD_TTL_SECONDS": "2", **UNLIMITED_HOLDS, "LOG_LEVEL": "WARNING", "DB_POOL_MAX": "20", "APP_ENV": "test",
           "SEAT_GATE_ENABLED": "false"}
    rates: dict[str, list[float]] = {}
    cluster("clean")
    try:
        cluster("pg-up")
        primary = PORT + 131 + int(cluster("pg-primary"))
        dsns = {"single PostgreSQL, direct": (DSN, {}),
                "Patroni primary, direct (synchronous standby)": (at(DSN, primary), {}),
                "Patroni via HAProxy (cluster mode's path)": (at(DSN, PORT + 150), {}),
                "single PostgreSQL, statement cache off": (DSN, {"DB_STATEMENT_CACHE_SIZE": "0"})}
        with ExitStack() as stack:
            ports = {name: uvicorn(stack, FACTORY, {**env, "HOLD_DATABASE_URL": dsn, **extra}, 1)
                     for name, (dsn, extra) in dsns.items()}
            conns = {name: await asyncpg.connect(dsn) for name, (dsn, _) in dsns.items()}
            showtimes = {name: await new_showtime(conns[name]) for name in dsns}
            await asyncio.sleep(1.0)
            for _ in range(ROUNDS):
                for name, port in ports.items():
                    stats = await asyncio.to_thread(wrk_capacity, port, requests_for(showtimes[name], tokens, 1),
                                                    PROBE_SECONDS)
                    rates.setdefault(name, []).append(stats.rate)
                    await asyncio.sleep(0.5)
            for name, conn in conns.items():
                await conn.execute("DELETE FROM outbox WHERE published_at IS NULL AND (convert_from(payload, "
                                   "'UTF8')::jsonb ->> 'showtimeId')::bigint = $1", showtimes[name])
                await conn.close()
    finally:
        cluster("down")
        cluster("clean")
    median = {name: sorted(r)[len(r) // 2] for name, r in rates.items()}
    single = rates["single PostgreSQL, direct"]
    # Each path against the single server of the same round (the machine's speed moves between rounds), median.
    ratio = {name: sorted(r / b for r, b in zip(rs, single, strict=True))[len(rs) // 2] for name, rs in rates.items()}
    print(f"machine: {os.cpu_count()} cores (shared); wrk closed loop, {PROBE_SECONDS:.0f} s probes, {ROUNDS} "
          "interleaved rounds; one hold-service instance per path, gate off, holds on one 300-seat showtime each")
    for name, rate in median.items():
        print(f"  {name:48s} {rate:8.0f} holds/s (median)  {ratio[name]:5.2f} of single (median of the rounds' "
              f"ratios)   rounds: {', '.join(f'{r:.0f}' for r in rates[name])}")
    return {"per_s": {name: round(rate) for name, rate in median.items()},
            "of_single": {name: round(r, 3) for name, r in ratio.items()}}


async def run_and_save() -> None:
    with Results("pg_path") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
