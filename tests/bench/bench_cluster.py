"""make bench-cluster: holds/s through HAProxy to one and to two hold-service instances, beside the same
instance reached directly and the bare FastAPI endpoint, in one run.

Every server runs at once for the whole run: the bare endpoint (2 uvicorn workers, as bench-holds), two
hold-service instances of one uvicorn worker each (as cluster mode runs them: deploy/local/cluster.sh), and
one HAProxy (the cluster's settings) with a front door each for: the bare endpoint, instance A alone, A and B
round robin. Capacity is wrk's closed loop (bench_holds.wrk_capacity: pre-built requests, 64 connections),
the median of ROUNDS probes per configuration taken in interleaved rounds, so the machine's drift hits each
alike. On 2 cores a second instance adds no core, and HAProxy takes CPU from the servers: the figures show
what the balancer costs, not what scaling out gains (docs/scaling.md does that arithmetic).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import uvloop
from bench_holds import (
    CUSTOMERS,
    DSN,
    MIGRATIONS,
    PROBE_SECONDS,
    SECRET,
    new_showtime,
    requests_for,
    wrk_capacity,
)
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, free_port, service_process, shared_migrations
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROUNDS = int(os.environ.get("BENCH_CLUSTER_ROUNDS", "3"))
FACTORY = "hold_service.entrypoints.api.app:get_application"
HAPROXY = """global
    maxconn 4096
defaults
    mode http
    option forwardfor
    option redispatch
    retries 3
    retry-on conn-failure
    timeout connect 1s
    timeout client 60s
    timeout server 30s
"""


def uvicorn(stack: ExitStack, factory: str, env: dict[str, str], workers: int, app_dir: str | None = None) -> int:
    port = free_port()
    args = ["-m", "uvicorn", "--factory", factory, "--workers", str(workers), "--host", "127.0.0.1", "--port",
            str(port), "--no-access-log", "--log-level", "warning", *(["--app-dir", app_dir] if app_dir else [])]
    stack.enter_context(service_process(args, env, ready_url=f"http://127.0.0.1:{port}/healthz", timeout=90))
    return port


def haproxy(stack: ExitStack, doors: dict[str, list[int]]) -> dict[str, int]:
    """One front door per name, round robin over its servers; door name -> port."""
    ports, text = {}, HAPROXY
    for name, servers in doors.items():
        ports[name] = free_port()
        text += f"frontend {name}\n    bind 127.0.0.1:{ports[name]}\n    default_backend {name}\n"
        text += f"backend {name}\n    balance roundrobin\n"
        text += "".join(f"    server {name}-{i} 127.0.0.1:{p}\n" for i, p in enumerate(servers, 1))
    config = stack.enter_context(tempfile.NamedTemporaryFile("w", suffix=".cfg"))
    config.write(text)
    config.flush()
    proc = subprocess.Popen(["haproxy", "-db", "-f", config.name], stdout=subprocess.DEVNULL)
    stack.callback(proc.wait)
    stack.callback(proc.terminate)
    return ports


async def main() -> dict:
    if not shutil.which("haproxy") or not shutil.which("wrk"):
        raise SystemExit("bench-cluster needs haproxy and wrk (make bench-cluster installs them)")
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    tokens = [issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role="customer").encode()
              for _ in range(CUSTOMERS)]
    conn = await asyncpg.connect(DSN)
    env = {"HOLD_DATABASE_URL": DSN, "HOLD_TTL_SECONDS": "2", **UNLIMITED_HOLDS, "LOG_LEVEL": "WARNING",
           "DB_POOL_MAX": "20", "APP_ENV": "test"}
    rates: dict[str, list[float]] = {}
    with ExitStack() as stack:
        bare = uvicorn(stack, "bare_app:get_application", {}, 2, app_dir=str(Path(__file__).parent))
        a, b = uvicorn(stack, FACTORY, env, 1), uvicorn(stack, FACTORY, env, 1)
        lb = haproxy(stack, {"bare": [bare], "one": [a], "two": [a, b]})
        await asyncio.sleep(1.0)
        targets = {"bare endpoint (2 workers), direct": bare, "bare endpoint via HAProxy": lb["bare"],
                   "hold-service, one instance, direct": a, "hold-service, one instance via HAProxy": lb["one"],
                   "hold-service, two instances via HAProxy": lb["two"]}
        showtimes = {name: await new_showtime(conn) for name in targets}
        for _ in range(ROUNDS):
            for name, port in targets.items():
                stats = await asyncio.to_thread(wrk_capacity, port, requests_for(showtimes[name], tokens, 1),
                                                PROBE_SECONDS)
                rates.setdefault(name, []).append(stats.rate)
                await asyncio.sleep(0.5)
    await conn.execute("DELETE FROM outbox WHERE published_at IS NULL AND (convert_from(payload, 'UTF8')::jsonb "
                       "->> 'showtimeId')::bigint = ANY($1::bigint[])", list(showtimes.values()))
    await conn.close()
    median = {name: sorted(r)[len(r) // 2] for name, r in rates.items()}
    base, one = median["bare endpoint (2 workers), direct"], median["hold-service, one instance, direct"]
    print(f"machine: {os.cpu_count()} cores (shared); wrk closed loop, 64 connections, {PROBE_SECONDS:.0f} s "
          f"probes, median of {ROUNDS} interleaved rounds; holds on one 300-seat showtime per door, HOLD_TTL 2 s")
    for name, rate in median.items():
        print(f"  {name:42s} {rate:8.0f} req/s  {rate / base:5.2f} of bare  "
              f"{rate / one:5.2f} of one instance direct   (rounds: {', '.join(f'{r:.0f}' for r in rates[name])})")
    return {"per_s": {name: round(rate) for name, rate in median.items()},
            "balancer_cost_one_instance": round(1 - median["hold-service, one instance via HAProxy"] / one, 3),
            "two_instances_of_one": round(median["hold-service, two instances via HAProxy"] / one, 3),
            "bare_via_balancer_of_bare": round(median["bare endpoint via HAProxy"] / base, 3)}


async def run_and_save() -> None:
    with Results("cluster") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
