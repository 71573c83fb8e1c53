"""make bench-seatmap: the seat map's read path and its stream's fan-out, against a 300-seat showtime.

Read path: hold-service (2 uvicorn workers, test database) with two bare endpoints of the same app and the
seat map's payload size (seatmap_bench_app.py): an ordinary FastAPI route, and one served ahead of routing
as the seat map is. Capacity of each (and of GET .../seats with a full body and with a matching
If-None-Match, 304) by `wrk` (closed loop, 64 connections, 1 thread; two rounds, interleaved); then p50/p99
at 70 % of each capacity by the open-loop generator (tests/bench/open_loop.py: latency from the intended
send time), with the map quiet, and for the full body again while the map changes CHANGE_RATE times a
second (holds and releases written by the real SQL, as other processes' holds would be).

Fan-out: one uvicorn process (its pid, so its RSS and CPU are read from /proc). STREAMS streams are opened
by a lean client (raw asyncio protocols); memory per 1,000 idle streams is the RSS growth; idle CPU is read
over a heartbeat period; then changes are made for CHANGE_SECONDS at each rate of DELIVERIES, by another
process (the Changer), and every stream must receive each version in order (gaps counted), with the delivery
latency from each change's commit and the server's CPU per change delivered (above idle; the changes of a
flush window go to a stream in one write). Figures, never pass/fail; the machine is shared and noisy.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import shutil
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from urllib.parse import quote

import asyncpg
import httpx
import uvloop
from bench_holds import DSN, ROWS, Stats, forget_events, new_showtime, open_loop, pct, server, wrk_capacity
from hdrh.histogram import HdrHistogram
from hold_service.adapters.repository import FORM, Q
from hold_service.adapters.seat_map_source import seat_map_body, seat_map_of
from results import Results
from sse_client import Fanout, cpu_seconds, get, rss_mb
from ticketing_testing import apply_migrations, free_port, service_process, shared_migrations

MIGRATIONS = Path(__file__).resolve().parents[2] / "services/hold-service/src/hold_service/sql/migrations"
PROBE_SECONDS, RUN_SECONDS, SWEEP_SECONDS = 4.0, 6.0, 4.0
ROUNDS = int(os.environ.get("BENCH_SEATMAP_ROUNDS", "3"))  # of the 70 % runs, interleaved
AT_70 = ("bare FastAPI route", "seat map, full body", "seat map, 304", "what's on, full body", "what's on, 304")
SWEPT = ("seat map, full body", "seat map, 304")
# Offered load as shares of each one's capacity, for the report's throughput and p99 plot.
# What's on, asked as a page asks it: a fixed window (the catalogue keeps one answer per question), tomorrow's start
# of the bench's showtime inside it.
_NOW = datetime.now(UTC).replace(microsecond=0)
CATALOGUE_PATH = ("/showtimes?from=" + quote(_NOW.isoformat()) + "&to=" + quote((_NOW + timedelta(days=2)).isoformat()))
SWEEP = [float(x) for x in os.environ.get("BENCH_SEATMAP_SWEEP", "0.3,0.5,0.7,0.9,1.1").split(",") if x]
STREAMS = [int(n) for n in os.environ.get("BENCH_STREAMS", "1000,4000").split(",")]
CHANGE_RATE = 20.0  # the read path's "map changing" run
# Fan-out: changes a second to how many streams (the bench's own client reads every stream: 4,000 streams at
# 200 changes/s would measure the client).
DELIVERIES = [(float(rate), int(streams)) for rate, streams in
              (p.split("x") for p in os.environ.get("BENCH_DELIVERIES", "20x4000,200x1000").split(","))]
CHANGE_SECONDS = 5.0
IDLE_SECONDS = 16.0  # one heartbeat period (15 s) and a little
# BENCH_PHASES=reads or =fanout runs one of the two.
# Every stream comes from 127.0.0.1: the per-address cap is lifted (each stream still takes its lease in Redis).
SERVICE_ENV = {"HOLD_DATABASE_URL": DSN, "LOG_LEVEL": "WARNING", "APP_ENV": "dev", "SEAT_MAP_MAX_STREAMS": "100000",
               "SEAT_MAP_MAX_STREAMS_PER_ADDRESS": "100000"}
APP_DIR = str(Path(__file__).parent)


class Changer:
    """Seat changes through the real SQL (take_seats, release_hold), one connection, `rate` a second."""

    def __init__(self, sid: int) -> None:
        self.sid, self.held, self.committed = sid, dict[str, uuid.UUID](), dict[int, float]()
        self.rng = random.Random(7)

    async def run(self, rate: float, count: int | None = None, stop: asyncio.Event | None = None) -> int:
        conn = await asyncpg.connect(DSN)
        made, start = 0, time.perf_counter()
        try:
            while (count is None or made < count) and not (stop and stop.is_set()):
                seat = f"{self.rng.choice(ROWS)}{self.rng.randint(1, 20)}"
                if seat in self.held:
                    row = await conn.fetchrow(Q.release_hold, self.held.pop(seat), "CANCELLED", FORM, "[]")
                    version = None if row is None else row["version"]
                else:
                    hold = uuid.uuid4()
                    row = await conn.fetchrow(Q.take_seats, self.sid, 600.0, 8, [hold], [self.rng.randint(1, 10**9)],
                                              [uuid.uuid4()], [1], [seat], ["[]"], FORM, ["ADULT"], 0, False)
                    self.held[seat] = hold
                    version = None if row is None else row["last_version"]
                if version is not None:
                    self.committed[version] = time.perf_counter()
                    made += 1
                await asyncio.sleep(max(0.0, start + made / rate - time.perf_counter()))
        finally:
            await conn.close()
        return made


def change_in_process(sid: int, rate: float, count: int) -> dict[int, float]:
    """In a process of its own, off the loop that reads the streams: {version: commit time (perf_counter,
    CLOCK_MONOTONIC, the same clock in every process)}."""
    changer = Changer(sid)
    asyncio.run(changer.run(rate, count=count))
    return changer.committed


def latency(s: Stats, offered: float) -> dict:
    return {"offered_per_s": round(offered), "answered_per_s": round(s.rate), "p50_ms": pct(s, 50),
            "p99_ms": pct(s, 99), "p999_ms": pct(s, 99.9), "codes": s.codes, "client_cpu": round(s.client_cpu, 2)}


async def measure_reads(conn: asyncpg.Connection) -> dict:
    sid = await new_showtime(conn)
    seats_path = f"/showtimes/{sid}/seats"
    fresh = seat_map_of(sid, await conn.fetchrow(Q.seat_map, sid))
    body_size = len(seat_map_body(fresh))  # what GET .../seats sends, checked below
    with ExitStack() as stack:
        port = server(stack, "seatmap_bench_app:get_application", {**SERVICE_ENV, "BENCH_BARE_BYTES": str(body_size)},
                      APP_DIR)
        first = httpx.get(f"http://127.0.0.1:{port}{seats_path}")
        assert len(first.content) == body_size, (len(first.content), body_size)
        version = first.json()["version"]
        listing = httpx.get(f"http://127.0.0.1:{port}{CATALOGUE_PATH}")  # GET /showtimes: one window, one ETag
        assert listing.status_code == 200 and sid in {s["showtimeId"] for s in listing.json()["showtimes"]}
        targets = {"bare FastAPI route": [get("/bench/bare")], "bare, ahead of routing": [get("/bench/bare-hot")],
                   "seat map, full body": [get(seats_path)], "seat map, 304": [get(seats_path, version)],
                   "what's on, full body": [get(CATALOGUE_PATH)],
                   "what's on, 304": [get(CATALOGUE_PATH, listing.headers["etag"])]}
        capacity: dict[str, list[Stats]] = {name: [] for name in targets}
        for _ in range(2):
            for name, requests in targets.items():
                capacity[name].append(await asyncio.to_thread(wrk_capacity, port, requests, PROBE_SECONDS))
        rate = {name: sum(s.rate for s in runs) / len(runs) for name, runs in capacity.items()}
        at70: dict[str, list[dict]] = {name: [] for name in AT_70}
        for _ in range(ROUNDS):  # interleaved: a stall of the machine hits one round of each, not one target
            for name in AT_70:
                at70[name].append(latency(await open_loop(port, 0.7 * rate[name], RUN_SECONDS, targets[name]),
                                          0.7 * rate[name]))
        sweep: dict[str, list[dict]] = {name: [] for name in SWEPT}
        for share in SWEEP:
            for name in SWEPT:
                point = latency(await open_loop(port, share * rate[name], SWEEP_SECONDS, targets[name]),
                                share * rate[name])
                sweep[name].append({"share": share, **point})
        stop, changer = asyncio.Event(), Changer(sid)
        changing = asyncio.ensure_future(changer.run(CHANGE_RATE, stop=stop))
        churn = await open_loop(port, 0.7 * rate["seat map, full body"], RUN_SECONDS, targets["seat map, full body"])
        stop.set()
        changes = await changing
    await forget_events(conn, [sid])
    bare = rate["bare FastAPI route"]
    print(f"\n== read path: GET /showtimes/{{id}}/seats, 300 seats, {body_size} bytes; GET /showtimes (what's on, "
          f"{len(listing.content)} bytes, {len(listing.json()['showtimes'])} showtimes); 2 uvicorn workers")
    print("capacity (wrk, closed loop, 64 connections; mean of 2 rounds, responses/s)")
    for name in targets:
        runs = capacity[name]
        print(f"  {name:24s} {rate[name]:8.0f}/s = {rate[name] / bare:4.2f} of bare  "
              f"(rounds {', '.join(f'{s.rate:.0f}' for s in runs)}; codes {runs[0].codes})")
    print(f"at 70 % of each one's capacity (open loop, {RUN_SECONDS:.0f} s; {ROUNDS} rounds, interleaved): "
          f"p50 / p99 / p99.9 ms")
    for name, runs in at70.items():
        print(f"  {name:24s} " + "; ".join(f"{r['answered_per_s']}/s {r['p50_ms']:.1f} / {r['p99_ms']:.1f} / "
                                           f"{r['p999_ms']:.1f}" for r in runs)
              + f"  (median p99 {median(r['p99_ms'] for r in runs):.1f} ms; load generator "
                f"{runs[0]['client_cpu']:.2f} core)")
    churned = latency(churn, 0.7 * rate["seat map, full body"])
    print(f"  {'full body, map changing':24s} {churned['answered_per_s']}/s while {changes / RUN_SECONDS:.0f} "
          f"changes/s: p50 {churned['p50_ms']:.1f} ms, p99 {churned['p99_ms']:.1f} ms, codes {churn.codes}")
    print("offered load sweep (open loop, share of each one's capacity): offered -> answered/s, p99 ms")
    for name, points in sweep.items():
        print(f"  {name:24s} " + "; ".join(f"{p['offered_per_s']} -> {p['answered_per_s']}/s {p['p99_ms']:.0f}"
                                           for p in points))
    return {"body_bytes": body_size, "catalogue_bytes": len(listing.content),
            "capacity_per_s": {name: round(r) for name, r in rate.items()},
            "of_bare": {name: round(r / bare, 3) for name, r in rate.items()},
            "at70": {name: {"rounds": runs, "median_p99_ms": median(r["p99_ms"] for r in runs),
                            "median_p50_ms": median(r["p50_ms"] for r in runs)} for name, runs in at70.items()},
            "at70_map_changing": {**churned, "changes_per_s": round(changes / RUN_SECONDS, 1)},
            "sweep": sweep["seat map, full body"], "sweep_304": sweep["seat map, 304"]}


async def measure_fanout(conn: asyncpg.Connection) -> dict:
    sid = await new_showtime(conn)
    port, path = free_port(), f"/showtimes/{sid}/seats/stream"
    args = ["-m", "uvicorn", "--factory", "hold_service.entrypoints.api.app:get_application", "--host", "127.0.0.1",
            "--port", str(port), "--no-access-log", "--log-level", "warning"]
    with service_process(args, SERVICE_ENV, ready_url=f"http://127.0.0.1:{port}/healthz") as proc:
        httpx.get(f"http://127.0.0.1:{port}/showtimes/{sid}/seats")
        fan, rss = Fanout(), [(0, rss_mb(proc.pid))]
        for count in STREAMS:
            await fan.open(port, path, count - len(fan.streams))
            await asyncio.sleep(1.0)
            rss.append((count, rss_mb(proc.pid)))
        streams = len(fan.streams)
        cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
        beats0 = sum(s.heartbeats for s in fan.streams)
        await asyncio.sleep(IDLE_SECONDS)
        idle = (cpu_seconds(proc.pid) - cpu0) / (time.perf_counter() - t0)
        beats = sum(s.heartbeats for s in fan.streams) - beats0
        delivered = []
        for rate, count in DELIVERIES:
            fan.keep(count)
            delivered.append(await deliver(fan, proc.pid, sid, rate, idle))
        fan.close()
    await forget_events(conn, [sid])
    print(f"\n== stream fan-out: one uvicorn process, {streams} streams of one showtime")
    (_, base), *grown = rss
    for n, mb in grown:
        print(f"  RSS with {n:5d} idle streams: {mb:7.1f} MB, +{(mb - base) / n * 1000:5.1f} MB per 1,000 "
              f"(none: {base:.1f} MB)")
    print(f"  idle CPU: {idle * 100:5.2f} % of a core for {streams} streams = {idle * 100 / streams * 1000:5.3f} % "
          f"per 1,000 ({beats} heartbeats in {IDLE_SECONDS:.0f} s)")
    for d in delivered:
        print(f"  {d['changes']} changes at {d['rate']:.0f}/s -> {d['deliveries']} deliveries in {d['seconds']:.1f} s: "
              f"server CPU {d['cpu_us_per_delivery']:5.1f} us per change delivered ({d['cpu_share']:.0%} of a core "
              f"above idle; client {d['client_share']:.0%})\n"
              f"      commit -> received: p50 {d['p50_ms']:6.1f} ms, p99 {d['p99_ms']:6.1f} ms, max {d['max_ms']:6.1f} "
              f"ms; gaps {d['gaps']}; streams with every version {d['complete']}/{d['streams']}")
    return {"streams": streams, "rss_mb": dict(rss), "rss_mb_per_1000": {n: round((mb - base) / n * 1000, 2)
                                                                         for n, mb in grown},
            "idle_cpu_share_per_1000": round(idle / streams * 1000, 5), "heartbeats": beats, "deliveries": delivered}


async def deliver(fan: Fanout, pid: int, sid: int, rate: float, idle: float) -> dict:
    """CHANGE_SECONDS of changes at `rate`/s to every stream: server CPU per delivery, commit -> arrival."""
    client0, count = time.process_time(), round(rate * CHANGE_SECONDS)
    fan.arrivals.clear()
    fan.aim(-1)
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        committed = await asyncio.wrap_future(pool.submit(change_in_process, sid, rate, count))
    made = len(committed)
    fan.aim(max(committed))
    await asyncio.wait_for(fan.reached.wait(), 120)
    elapsed = time.perf_counter() - t0
    busy = cpu_seconds(pid) - cpu0 - idle * elapsed
    client = (time.process_time() - client0) / elapsed
    hist = HdrHistogram(1, 60_000_000, 3)
    for version, at in fan.arrivals:
        if version in committed:
            hist.record_value(max(1, int((at - committed[version]) * 1e6)))
    streams = len(fan.streams)
    deliveries = made * streams
    return {"rate": rate, "changes": made, "streams": streams, "deliveries": deliveries, "seconds": round(elapsed, 2),
            "cpu_us_per_delivery": round(busy / deliveries * 1e6, 2), "cpu_share": round(busy / elapsed, 3),
            "client_share": round(client, 3), "p50_ms": hist.get_value_at_percentile(50) / 1000,
            "p99_ms": hist.get_value_at_percentile(99) / 1000, "max_ms": hist.get_max_value() / 1000,
            "gaps": sum(s.gaps for s in fan.streams), "complete": sum(s.version == fan.target for s in fan.streams)}


async def main(figures: dict) -> None:
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    client = "wrk" if shutil.which("wrk") else "no wrk: make bench-tools"
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start (others' work "
          f"included); capacity: {client}; one 300-seat showtime per phase")
    phases = os.environ.get("BENCH_PHASES", "reads,fanout").split(",")
    if "reads" in phases:
        figures["reads"] = await measure_reads(conn)
    if "fanout" in phases:
        figures["fanout"] = await measure_fanout(conn)
    await conn.close()
    print(f"\ntargets: full body and 304 >= 0.8 of bare; p99 < 50 ms at 70 %; memory and CPU per 1,000 streams "
          f"small (load average at the end {os.getloadavg()[0]:.1f})")


async def run_and_save() -> None:
    with Results("seatmap") as r:
        await main(r.data)


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
