"""make bench-wave: the statement that writes a wave of holds (sql take_seats), timed with each plan
Postgres may run it with.

A wave: a 300-seat showtime held by ~125 holds of 1-4 adjacent seats whose time has passed (still HELD in
their rows: lazy expiry), then ~130 new holds taking those seats in one statement, as the hold writer's
batch does behind the gate: each new hold records the SeatsReleased{EXPIRED} of the holds it takes, then
its SeatsHeld (~330 seat-map changes). Each wave's statement and its COMMIT are timed on a connection that
plans it for its parameters (custom plan) and on one that runs the plan Postgres makes once for any
parameters (generic plan), which is what the service runs (hold_service.bootstrap.PLANS). TRIALS waves
each, interleaved. Figures, not pass/fail.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
import uuid
from statistics import median

import asyncpg
import uvloop
from bench_holds import DSN, MIGRATIONS, forget_events, new_showtime
from bench_selloff import split  # the hall cut into holds of 1-4 adjacent seats
from hold_service.adapters.repository import FORM, Q
from results import Results
from ticketing_testing import apply_migrations, shared_migrations

TRIALS = int(os.environ.get("BENCH_WAVE_TRIALS", "5"))
TTL_SECONDS = 1.0
PLANS = ("force_custom_plan", "force_generic_plan")


async def take(conn: asyncpg.Connection, sid: int, holds: list[list[str]], rng: random.Random) -> tuple[int, float]:
    """One batch statement, its own transaction: (holds written, ms including COMMIT)."""
    started = time.perf_counter()
    rows = await conn.fetch(Q.take_seats, sid, TTL_SECONDS, 8, [uuid.uuid4() for _ in holds],
                            [rng.randint(1, 10**9) for _ in holds], [uuid.uuid4() for _ in holds],
                            [n for n, seats in enumerate(holds, 1) for _ in seats],
                            [s for seats in holds for s in seats], ["[]" for _ in holds], FORM,
                            ["ADULT" for seats in holds for _ in seats], 0, False)
    return sum(r["written"] for r in rows), (time.perf_counter() - started) * 1000


async def main(figures: dict) -> None:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    admin = await asyncpg.connect(DSN)
    conns = {plan: await asyncpg.connect(DSN, server_settings={"plan_cache_mode": plan}) for plan in PLANS}
    rng, sids = random.Random(1), []
    waves: dict[str, list[float]] = {plan: [] for plan in PLANS}
    written: dict[str, list[int]] = {plan: [] for plan in PLANS}
    for _ in range(TRIALS):
        for plan, conn in conns.items():
            sids.append(sid := await new_showtime(admin))
            await take(conn, sid, split(rng), rng)
            await asyncio.sleep(TTL_SECONDS + 0.2)
            n, ms = await take(conn, sid, split(rng), rng)
            waves[plan].append(ms)
            written[plan].append(n)
    await forget_events(admin, sids)
    for conn in (admin, *conns.values()):
        await conn.close()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; a wave = one statement writing "
          f"~130 holds over the seats of ~125 expired ones (300 seats), COMMIT included; {TRIALS} waves per plan")
    for plan in PLANS:
        runs = waves[plan]
        print(f"  {plan:20s} median {median(runs):6.1f} ms, max {max(runs):6.1f} ms  "
              f"({', '.join(f'{ms:.0f}' for ms in runs)}; holds written {min(written[plan])}-{max(written[plan])})")
        figures[plan] = {"median_ms": round(median(runs), 1), "max_ms": round(max(runs), 1), "runs_ms": runs}


async def run_and_save() -> None:
    with Results("wave") as r:
        await main(r.data)


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
