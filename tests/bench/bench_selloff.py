"""make bench-selloff (scenario L3 of docs/reliability.md, a sale opening): BENCH_SELLOFF_SHOWTIMES (2) showtimes of
300 seats, the default hold TTL (600 s: nothing comes back), customers in open loop at BENCH_SELLOFF_RATE (800)
holds/s (latency from each request's intended send time: coordinated omission corrected, open_loop.py), until every
seat is HELD (nobody pays here, so none is BOOKED).

What customers ask for: per showtime, five different random splits of the hall into holds of 1-4 adjacent
seats, interleaved at random (so most requests collide, as at an opening), then every seat alone in random
order (the customer who takes whatever single seat is left), cycled. So the sale always ends, and the last
seats go to the last-chance requests as they would to customers reading the seat map.

Reports time to sell out (first request to the last admitted hold's answer), admitted holds/s, p50/p99 of
admitted and of refused holds (by the gate or by Postgres), and Postgres work per sold seat: pg_stat_database
deltas of the test database (transactions, rows written, buffers touched; other runs on the same database
would add to them) and the hold schema's rows updated and inserted (pg_stat_user_tables). Writes
var/bench/selloff.json.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from contextlib import ExitStack

import asyncpg
import orjson
import uvloop
from bench_holds import MIGRATIONS, ROWS, forget_events, new_showtime, server
from hdrh.histogram import HdrHistogram
from open_loop import OpenLoop
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, env, shared_migrations, test_dsn
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

SHOWTIMES = int(os.environ.get("BENCH_SELLOFF_SHOWTIMES", "2"))
RATE = float(os.environ.get("BENCH_SELLOFF_RATE", "800"))
SPLITS, CUSTOMERS, CONNECTIONS, LIMIT_SECONDS = 5, 5000, 128, 120.0
DSN = test_dsn(env("HOLD_DATABASE_URL"))
SECRET = env("JWT_SECRET", "dev-only-change-me")
DB_WORK = ("SELECT xact_commit, tup_inserted + tup_updated + tup_deleted AS rows_written, "
           "blks_hit + blks_read AS buffers FROM pg_stat_database WHERE datname = current_database()")
HOLD_ROWS = ("SELECT coalesce(sum(n_tup_upd), 0) AS updated, coalesce(sum(n_tup_ins), 0) AS inserted "
             "FROM pg_stat_user_tables WHERE schemaname = current_schema()")
FREE = ("SELECT count(*) FROM show_seat WHERE showtime_id = ANY($1::bigint[]) "
        "AND (status = 'AVAILABLE' OR (status = 'HELD' AND hold_expires_at < now()))")


def split(rng: random.Random) -> list[list[str]]:
    """The hall cut into holds of 1-4 adjacent seats of one row."""
    groups = []
    for row in ROWS:
        n = 1
        while n <= 20:
            size = min(rng.randint(1, 4), 21 - n)
            groups.append([f"{row}{i}" for i in range(n, n + size)])
            n += size
    return groups


def wishes(rng: random.Random) -> list[list[str]]:
    """One showtime's stream: SPLITS splits interleaved at random, then every seat alone."""
    stream = [g for _ in range(SPLITS) for g in split(rng)]
    rng.shuffle(stream)
    singles = [[f"{row}{i}"] for row in ROWS for i in range(1, 21)]
    rng.shuffle(singles)
    return stream + singles


def requests_for(sids: list[int], tokens: list[bytes], rng: random.Random) -> list[bytes]:
    streams = [wishes(rng) for _ in sids]
    out = []
    for k in range(max(map(len, streams))):
        for sid, stream in zip(sids, streams, strict=True):
            if k < len(stream):
                body = orjson.dumps({"seats": stream[k]})
                out.append(b"POST /showtimes/%d/holds HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
                           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                           % (sid, rng.choice(tokens), len(body), body))
    return out


async def main() -> None:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    rng = random.Random(17)
    tokens = [issue_token(SECRET, sub=str(rng.randint(10**9, 2**40)), role="customer").encode()
              for _ in range(CUSTOMERS)]
    conn = await asyncpg.connect(DSN)
    sids = [await new_showtime(conn) for _ in range(SHOWTIMES)]
    requests = requests_for(sids, tokens, rng)
    # HOLD_TTL_SECONDS: the default, 600 s. Every simulated customer comes from 127.0.0.1: the per-address
    # limit (HOLD_RATE_LIMIT_PER_IP_PER_MINUTE) would answer nearly all of them 429.
    service_env = {"HOLD_DATABASE_URL": DSN, **UNLIMITED_HOLDS, "LOG_LEVEL": "WARNING",
                   "DB_POOL_MAX": "20", "APP_ENV": "dev"}
    with Results("selloff") as r, ExitStack() as stack:
        port = server(stack, "hold_service.entrypoints.api.app:get_application", service_env)
        await asyncio.sleep(1.5)
        db0, rows0 = dict(await conn.fetchrow(DB_WORK)), dict(await conn.fetchrow(HOLD_ROWS))
        sold_out_at: list[float] = []

        async def watch() -> None:
            while not sold_out_at:
                if await conn.fetchval(FREE, sids) == 0:
                    sold_out_at.append(time.perf_counter())
                await asyncio.sleep(0.02)

        generator = OpenLoop(lambda status, body: str(status) + ("gate" if b'"decidedBy":"gate"' in body else ""))
        watcher = asyncio.create_task(watch())
        answers = await generator.run("127.0.0.1", port, CONNECTIONS, RATE, LIMIT_SECONDS, requests,
                                      until=lambda: bool(sold_out_at))
        watcher.cancel()
        stack.close()  # the server's backends exit and flush their statistics
        await asyncio.sleep(1.5)
        db1, rows1 = dict(await conn.fetchrow(DB_WORK)), dict(await conn.fetchrow(HOLD_ROWS))
        free = await conn.fetchval(FREE, sids)
        hist = {k: HdrHistogram(1, 60_000_000, 3) for k in ("admitted", "refused")}
        counts: dict[str, int] = {}
        last_admitted = 0.0
        for (key, latency_us), intended in zip(answers, generator.intended, strict=True):
            counts[key] = counts.get(key, 0) + 1
            hist["admitted" if key == "201" else "refused"].record_value(max(1, latency_us))
            if key == "201":
                last_admitted = max(last_admitted, intended + latency_us / 1e6)
        seats = 300 * SHOWTIMES - free
        admitted = counts.get("201", 0)

        def pct(name: str, q: float) -> float:
            return hist[name].get_value_at_percentile(q) / 1000 if hist[name].get_total_count() else 0.0

        r.data.update({
            "showtimes": SHOWTIMES, "seats": 300 * SHOWTIMES, "seats_sold": seats, "offered_per_s": RATE,
            "hold_ttl_s": 600, "requests": len(answers), "answers": counts,
            "time_to_sell_out_s": round(last_admitted, 3), "admitted_holds": admitted,
            "admitted_per_s": round(admitted / max(last_admitted, 1e-9), 1),
            "admitted_p50_ms": pct("admitted", 50), "admitted_p99_ms": pct("admitted", 99),
            "refused_p50_ms": pct("refused", 50), "refused_p99_ms": pct("refused", 99),
            "load_generator_cpu": round(generator.cpu, 2),
            "pg_per_sold_seat": {k: round((db1[k] - db0[k]) / max(seats, 1), 2) for k in db0},
            "hold_rows_per_sold_seat": {k: round(float(rows1[k] - rows0[k]) / max(seats, 1), 2) for k in rows0},
            "pg_source": "pg_stat_database of the test database (xact_commit, tup_inserted+updated+deleted, "
                         "blks_hit+read) and pg_stat_user_tables of the hold schema",
        })
        d = r.data
        print(f"bench-selloff: {SHOWTIMES} showtimes x 300 seats, HOLD_TTL 600 s, open loop {RATE:.0f} holds/s offered "
              f"({CONNECTIONS} connections, {CUSTOMERS} customers; generator {d['load_generator_cpu']} core)")
        print(f"  sold {seats}/{300 * SHOWTIMES} seats in {d['time_to_sell_out_s']:.2f} s: {admitted} holds admitted "
              f"({d['admitted_per_s']:.0f}/s) of {len(answers)} requests; answers {counts}")
        print(f"  admitted holds p50 {d['admitted_p50_ms']:.1f} ms p99 {d['admitted_p99_ms']:.1f} ms; refused "
              f"p50 {d['refused_p50_ms']:.1f} ms p99 {d['refused_p99_ms']:.1f} ms")
        print(f"  Postgres per sold seat ({d['pg_source']}): {d['pg_per_sold_seat']}; hold rows "
              f"{d['hold_rows_per_sold_seat']}")
    await forget_events(conn, sids)
    await conn.close()
    print(f"  load average before/after: {r.data['load_before']} / {r.data['load_after']}")


if __name__ == "__main__":
    sys.exit(uvloop.run(main()))
