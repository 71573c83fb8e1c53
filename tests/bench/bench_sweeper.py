"""make bench-sweeper: how fast hold-service's sweeper ends a burst of abandoned holds, with one sweeper and with two
at once, and the backlog of expired holds still HELD over time until it is zero.

A burst: BURST (10,000) holds of 1-4 adjacent seats over 300-seat showtimes (~125 holds each, so ~80 showtimes),
written by the hold path's own batch statement (sql take_seats) with TTLs that make every one of them
expire at the same instant, and never paid. Just after it the sweepers start, each in its own process wired as the
worker wires it (hold_service.bootstrap) and running the worker's sweep (service_layer/lifecycle.py sweep_expired:
its batch statement, then the gate's keys in Redis) sweep after sweep, back to back, until one finds nothing and no
expired hold is left (the worker waits SWEEP_INTERVAL_SECONDS between sweeps; one sweep ends up to SWEEP_BATCH_SIZE
x SWEEP_MAX_BATCHES holds, more than a burst). Meanwhile this process reads the backlog (sql expired_backlog) every
SAMPLE_SECONDS. Printed per run: holds ended per second (the burst over the time from the first sweeper's start,
START_AFTER the expiry, to the end of the last sweep that found holds), each sweeper's share, SeatsReleased events
per hold (1 exactly: no hold ended twice, none missed), and the backlog's count and oldest age over time (of the
last round). ROUNDS rounds, one sweeper and two interleaved, and their medians. Beside them, the old shape: one hold
per statement (SWEEP_BATCH_SIZE=1, as the sweeper ended holds before) on OLD_BURST holds, and the old ceiling of 200
holds per 15 s sweep. Figures, not pass/fail.

    python tests/bench/bench_sweeper.py                      # the whole benchmark
    python tests/bench/bench_sweeper.py sweeper <t0> <batch>  # one sweeper process (started by the benchmark)
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid
from statistics import median
from typing import Any

import asyncpg
import uvloop
from bench_holds import DSN, MIGRATIONS, SECRET, forget_events, new_showtime
from bench_selloff import split  # a hall cut into holds of 1-4 adjacent seats
from hold_service.adapters.repository import FORM, Q
from results import Results
from ticketing_testing import apply_migrations, env, shared_migrations

BURST = int(os.environ.get("BENCH_SWEEPER_BURST", "10000"))
OLD_BURST = int(os.environ.get("BENCH_SWEEPER_OLD_BURST", "1000"))
SETUP_SECONDS = float(os.environ.get("BENCH_SWEEPER_SETUP_SECONDS", "20"))  # to write a burst and start the sweepers
ROUNDS = int(os.environ.get("BENCH_SWEEPER_ROUNDS", "3"))
SAMPLE_SECONDS = 0.25
# The sweepers start this long after the burst's expiry: a hold's expiry is its statement's start (Postgres' clock)
# plus its TTL, a few milliseconds after the instant the TTL was computed for.
START_AFTER = 0.1
GIVE_UP_SECONDS = 300.0  # a sweeper still finding expired holds this long after the expiry stops (and says so)
OLD_PER_SWEEP, OLD_INTERVAL = 200, 15.0  # the sweeper's bound before batches: 200 holds per 15 s sweep


async def burst(conn: asyncpg.Connection, holds: int, rng: random.Random) -> tuple[list[int], float]:
    """`holds` abandoned holds that all expire at the returned unix time: (their showtimes, that time)."""
    expiry, sids, made = time.time() + SETUP_SECONDS, [], 0
    while made < holds:
        sids.append(sid := await new_showtime(conn))
        groups = split(rng)[:holds - made]
        rows = await conn.fetch(Q.take_seats, sid, expiry - time.time(), 8, [uuid.uuid4() for _ in groups],
                                [rng.randint(1, 10**12) for _ in groups], [uuid.uuid4() for _ in groups],
                                [n for n, seats in enumerate(groups, 1) for _ in seats],
                                [s for seats in groups for s in seats], ["[]" for _ in groups], FORM,
                                ["ADULT" for seats in groups for _ in seats], 0, False)
        made += sum(r["written"] for r in rows)
    return sids, expiry


async def drain(conn: asyncpg.Connection) -> None:
    """End every expired hold now (what earlier runs or tests left), so that the backlog starts at zero."""
    while await conn.fetch(Q.sweep_expired, 10_000, FORM, "[]"):
        pass


def start_sweepers(count: int, expiry: float, batch: int) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([sys.executable, __file__, "sweeper", repr(expiry), str(batch)], stdout=subprocess.PIPE,
                             text=True) for _ in range(count)]


async def watch(conn: asyncpg.Connection, expiry: float, sweepers: list[subprocess.Popen[str]]) -> list[list[float]]:
    """[seconds since the expiry, holds in the backlog, oldest age] every SAMPLE_SECONDS until every sweeper is
    done."""
    await asyncio.sleep(max(0.0, expiry - 1.0 - time.time()))
    await drain(conn)  # holds of other runs that expired meanwhile: the backlog is the burst's alone
    await asyncio.sleep(max(0.0, expiry - time.time()))
    timeline: list[list[float]] = []
    while True:
        row = await conn.fetchrow(Q.expired_backlog)
        timeline.append([round(time.time() - expiry, 2), row["holds"], round(row["oldest_seconds"], 2)])
        if all(s.poll() is not None for s in sweepers):  # each left once it saw no backlog, or gave up
            return timeline
        await asyncio.sleep(SAMPLE_SECONDS)


async def released_per_hold(conn: asyncpg.Connection, sids: list[int]) -> tuple[int, int]:
    """(SeatsReleased events of the showtimes, distinct bookings they name)."""
    row = await conn.fetchrow("""
        SELECT count(*) AS events, count(DISTINCT message_key) AS holds FROM outbox
        WHERE convert_from(payload, 'UTF8')::jsonb ->> 'type' = 'SeatsReleased'
          AND (convert_from(payload, 'UTF8')::jsonb ->> 'showtimeId')::bigint = ANY($1::bigint[])""", sids)
    return row["events"], row["holds"]


async def run(conn: asyncpg.Connection, holds: int, sweepers: int, batch: int, rng: random.Random) -> dict[str, Any]:
    started = time.time()
    sids, expiry = await burst(conn, holds, rng)
    written = time.time() - started
    procs = start_sweepers(sweepers, expiry, batch)
    timeline = await watch(conn, expiry, procs)
    reports = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    events, named = await released_per_hold(conn, sids)
    await forget_events(conn, sids)
    drained = max(r["last_seconds"] for r in reports)
    sweeping = drained - min(r["late_seconds"] for r in reports)  # from the first sweeper's start
    return {"holds": holds, "showtimes": len(sids), "sweepers": sweepers, "batch": reports[0]["batch"],
            "burst_written_seconds": round(written, 2), "drained_seconds": round(drained, 3),
            "holds_per_second": round(holds / max(sweeping, 1e-3)), "shares": [r["swept"] for r in reports],
            "late_starts_seconds": [r["late_seconds"] for r in reports], "released_events": events,
            "holds_released": named, "timeline": timeline}


def show(name: str, r: dict[str, Any], timeline: bool) -> None:
    print(f"{name}: {r['holds']:,} holds over {r['showtimes']} showtimes (written in {r['burst_written_seconds']} s), "
          f"{r['sweepers']} sweeper(s), SWEEP_BATCH_SIZE={r['batch']}")
    shares, late = " + ".join(f"{s:,}" for s in r["shares"]), ", ".join(map(str, r["late_starts_seconds"]))
    print(f"  all ended {r['drained_seconds']} s after their expiry: {r['holds_per_second']:,} holds/s from the "
          f"sweepers' start ({late} s after the expiry); each sweeper ended {shares}")
    print(f"  SeatsReleased: {r['released_events']:,} events naming {r['holds_released']:,} holds "
          f"({r['released_events'] / max(r['holds'], 1):.2f} per hold)")
    if timeline:
        print("  backlog after the expiry (s: expired holds still HELD, oldest age s):")
        for t, count, oldest in r["timeline"]:
            print(f"    +{t:5.2f}  {int(count):6,}  {oldest:5.2f}")


async def main(figures: dict[str, Any]) -> None:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    await drain(conn)
    rng = random.Random(1)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"old shape: at most {OLD_PER_SWEEP} holds per {OLD_INTERVAL:.0f} s sweep = "
          f"{OLD_PER_SWEEP / OLD_INTERVAL:.1f} holds/s per replica, whatever the statement's speed")
    figures["old_ceiling_per_second"] = round(OLD_PER_SWEEP / OLD_INTERVAL, 1)
    old = figures["one hold per statement (old shape)"] = await run(conn, OLD_BURST, 1, 1, rng)
    show("one hold per statement (old shape)", old, timeline=False)
    runs: dict[str, list[dict[str, Any]]] = {"one sweeper": [], "two sweepers at once": []}
    for n in range(ROUNDS):  # interleaved, the order swapped every round: the machine's moods fall on both
        for name in sorted(runs, reverse=bool(n % 2)):
            runs[name].append(result := await run(conn, BURST, 1 if name == "one sweeper" else 2, 0, rng))
            show(f"round {n + 1}, {name}", result, timeline=n == ROUNDS - 1)
    await conn.close()
    print(f"median of {ROUNDS} rounds: " + "; ".join(
        f"{name} {median(r['holds_per_second'] for r in results):,.0f} holds/s" for name, results in runs.items())
          + f"; one hold per statement {old['holds_per_second']:,} holds/s; the old bound "
          f"{OLD_PER_SWEEP / OLD_INTERVAL:.1f} holds/s")
    figures.update(runs)


async def sweeper(expiry: float, batch: int) -> None:
    """One worker's sweeps from `expiry` on, back to back until one finds nothing; prints its JSON report."""
    from hold_service.bootstrap import bootstrap
    from hold_service.config import HoldSettings
    from hold_service.service_layer.lifecycle import expired_backlog, sweep_expired

    settings = HoldSettings(database_url=DSN, redis_url=env("REDIS_URL", "redis://127.0.0.1:6379/0"), jwt_secret=SECRET,
                            app_env="dev", **({"sweep_batch_size": batch} if batch else {}))
    service = await bootstrap(settings)
    await asyncio.sleep(max(0.0, expiry + START_AFTER - time.time()))
    late, swept, last = time.time() - expiry, 0, 0.0
    # Until a sweep finds nothing and no expired hold is left (the other sweeper's last batch, or holds whose
    # statement started late on a busy machine and expire a little after the instant), or GIVE_UP_SECONDS.
    while time.time() < expiry + GIVE_UP_SECONDS:
        if n := await sweep_expired(service.deps):
            swept, last = swept + n, time.time() - expiry
        elif (await expired_backlog(service.deps)).holds == 0:
            break
    await service.close()
    print(json.dumps({"swept": swept, "last_seconds": last, "late_seconds": round(late, 3),
                      "batch": settings.sweep_batch_size}))


async def run_and_save() -> None:
    with Results("sweeper") as r:
        await main(r.data)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sweeper"]:
        sys.exit(uvloop.run(sweeper(float(sys.argv[2]), int(sys.argv[3]))))
    sys.exit(uvloop.run(run_and_save()))
