"""make bench-best: best-available holds beside picked holds on the same showtime, in one run.

Starts hold-service (2 uvicorn workers, the test database, the Redis gate on, holds lasting HOLD_TTL_SECONDS=3
so that seats churn instead of selling out at once). Each round makes a fresh 300-seat showtime (15 rows of 20,
through POST /admin/showtimes, so its seats are ranked) and runs CLIENTS closed-loop customers on it for
ROUND_SECONDS: half of them pick, half ask for best available, all at the same time, so both kinds meet the
same contention. A picking customer does what a browser does: reads the public seat map (served from memory,
up to 2 s stale) and asks for a pair of adjacent seats it shows free, one of the PICK_AMONG best pairs (people
want the good seats: the thousands-click-the-same-seats case); a best-available customer asks
`{"best": {"count": 2}}`. Rounds swap which kind is started first.

Per kind: holds granted per second, and 409s per granted hold (the refusals a customer goes through per
pair of seats). At the end no seat may have been held by two holds at once (read from the bookings). The
load generator is Python on the same 2 cores as the service: compare the two kinds within a run, not a run
with another machine's. Figures go to var/bench/best.json.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import uvloop
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, env, free_port, service_process, shared_migrations, test_dsn
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"

ROWS, SEATS_PER_ROW = "ABCDEFGHIJKLMNO", 20
CLIENTS = int(os.environ.get("BENCH_BEST_CLIENTS", "32"))
ROUNDS = int(os.environ.get("BENCH_BEST_ROUNDS", "4"))
ROUND_SECONDS = float(os.environ.get("BENCH_BEST_SECONDS", "8"))
PICK_AMONG = 6
DSN = test_dsn(env("HOLD_DATABASE_URL"))
SECRET = env("JWT_SECRET", "dev-only-change-me")
KINDS = ("picked", "best")


def token(role: str = "customer") -> str:
    return issue_token(SECRET, sub=str(random.randint(10**9, 2**40)), role=role)


async def new_showtime(client: httpx.AsyncClient) -> int:
    sid = random.randint(10**15, 2**52)
    r = await client.post("/admin/showtimes", headers={"Authorization": f"Bearer {token('admin')}"}, json={
        "showtimeId": sid, "title": "bench", "startsAt": "2031-01-01T20:00:00Z",
        "layout": [{"row": r, "blocks": [{"from": 1, "to": SEATS_PER_ROW}]} for r in ROWS],
        "prices": {"STANDARD": {"ADULT": 1000}}})
    assert r.status_code == 201, r.text
    return sid


def good_pairs(seat_map: dict[str, Any]) -> list[list[str]]:
    """The free adjacent pairs the map shows, best first as a customer judges (middle rows, row centres)."""
    free = {(s["row"], s["x"]) for s in seat_map["seats"] if s["status"] == "AVAILABLE"}
    middle, centre = (len(ROWS) - 1) / 2, (SEATS_PER_ROW + 1) / 2
    pairs = [(abs(ROWS.index(r) - middle) * 100 + abs(x + 0.5 - centre), [f"{r}{x}", f"{r}{x + 1}"])
             for r, x in free if (r, x + 1) in free]
    return [p for _, p in sorted(pairs)]


async def customer(kind: str, client: httpx.AsyncClient, sid: int, until: float, tally: dict[str, Any]) -> None:
    while time.monotonic() < until:
        body: dict[str, Any] = {"best": {"count": 2}}
        if kind == "picked":
            pairs = good_pairs((await client.get(f"/showtimes/{sid}/seats")).json())
            if not pairs:
                await asyncio.sleep(0.05)
                continue
            body = {"seats": random.choice(pairs[:PICK_AMONG])}
        started = time.perf_counter()
        r = await client.post(f"/showtimes/{sid}/holds", json=body, headers={"Authorization": f"Bearer {token()}"})
        tally[kind]["ms"].append((time.perf_counter() - started) * 1000)
        tally[kind][r.status_code] = tally[kind].get(r.status_code, 0) + 1


async def one_round(client: httpx.AsyncClient, n: int) -> dict[str, Any]:
    sid = await new_showtime(client)
    tally: dict[str, Any] = {k: {"ms": []} for k in KINDS}
    kinds = [KINDS[(i + n) % 2] for i in range(CLIENTS)]  # interleaved; the first started swaps every round
    until = time.monotonic() + ROUND_SECONDS
    await asyncio.gather(*(customer(k, client, sid, until, tally) for k in kinds))
    return {"showtime": sid, **{k: summary(tally[k]) for k in KINDS}}


def summary(t: dict[str, Any]) -> dict[str, Any]:
    granted, refused = t.get(201, 0), t.get(409, 0)
    ms = sorted(t["ms"])
    return {"granted_per_s": round(granted / ROUND_SECONDS, 1), "granted": granted, "refused_409": refused,
            "refused_per_granted": round(refused / granted, 2) if granted else None,
            "other": {str(c): v for c, v in t.items() if c not in (201, 409, "ms")},
            "p50_ms": round(statistics.median(ms), 1) if ms else None,
            "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 1) if len(ms) >= 100 else None}


async def double_holds(conn: asyncpg.Connection, sid: int) -> int:
    """Seats held by two holds at overlapping times (0, or the platform sold a seat twice)."""
    return int(await conn.fetchval("""
        WITH s AS (SELECT hold_id, seat, created_at, expires_at FROM booking, unnest(seats) seat
                   WHERE showtime_id = $1)
        SELECT count(*) FROM s a JOIN s b ON a.seat = b.seat AND a.hold_id < b.hold_id
        WHERE a.created_at < b.expires_at AND b.created_at < a.expires_at""", sid))


async def main() -> dict[str, Any]:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    port = free_port()
    service_env = {"HOLD_DATABASE_URL": DSN, "HOLD_TTL_SECONDS": "3", **UNLIMITED_HOLDS, "LOG_LEVEL": "WARNING",
                   "DB_POOL_MAX": "20", "APP_ENV": "dev", "SEAT_GATE_ENABLED": "true"}
    args = ["-m", "uvicorn", "--factory", "hold_service.entrypoints.api.app:get_application", "--workers", "2",
            "--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--log-level", "warning"]
    rounds = []
    with ExitStack() as stack:
        stack.enter_context(service_process(args, service_env, ready_url=f"http://127.0.0.1:{port}/healthz"))
        limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=30) as client:
            for n in range(ROUNDS):
                rounds.append(await one_round(client, n))
                print_round(n, rounds[-1])
    conn = await asyncpg.connect(DSN)
    doubles = sum([await double_holds(conn, r["showtime"]) for r in rounds])
    await conn.close()
    medians = {k: {f: statistics.median(r[k][f] for r in rounds if r[k][f] is not None)
                   for f in ("granted_per_s", "refused_per_granted", "p50_ms")} for k in KINDS}
    print(f"\nmedian of {ROUNDS} rounds ({CLIENTS} customers, half each kind, {ROUND_SECONDS:.0f} s, 300 seats, "
          f"holds of 2 lasting 3 s):")
    for k in KINDS:
        m = medians[k]
        print(f"  {k:7s} {m['granted_per_s']:7.1f} holds granted/s, {m['refused_per_granted']:6.2f} 409s per "
              f"granted hold, p50 {m['p50_ms']:.1f} ms")
    print(f"seats held twice at once: {doubles}")
    return {"clients": CLIENTS, "round_seconds": ROUND_SECONDS, "rounds": rounds, "median": medians,
            "double_holds": doubles}


def print_round(n: int, r: dict[str, Any]) -> None:
    print(f"round {n + 1}: " + "; ".join(
        f"{k} {r[k]['granted_per_s']}/s granted, {r[k]['refused_per_granted']} 409/granted, p50 {r[k]['p50_ms']} ms"
        for k in KINDS))


async def run_and_save() -> None:
    with Results("best") as r:
        r.data.update(await main())


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
