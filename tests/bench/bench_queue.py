"""make bench-queue: the waiting room's joins/s and position polls/s, and how fast an opening admits.

Starts itself: hold-service (2 uvicorn workers, test database) and the bare FastAPI endpoints of the same
shapes (bare_app.py), measured in the same run with the same client, `wrk` (as bench-holds: closed loop,
pre-built requests). Then an opening: customers join before `opensAt`, poll their tickets at a steady rate
(open loop, as a page would), and the time from the opening to the first N admitted is read on both sides:
in Redis (the room's own record) and as the customers see it (distinct admission tokens in poll answers).
Last, in-process: one opening step alone with a large pre-opening queue (the shuffle is one Lua script, so
that is how long Redis is busy with it). Prints figures; never pass/fail.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import orjson
import redis.asyncio as aioredis
import uvloop
from bench_holds import DSN, MIGRATIONS, SECRET, new_showtime, started_server, wrk_capacity
from bench_vouchers import cpu_seconds
from open_loop import OpenLoop
from results import Results
from ticketing.auth import issue_token
from ticketing_testing import apply_migrations, env, shared_migrations
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

LIMIT, EARLY = 200, 2000  # the opening: active limit, customers who joined before it
POLL_SHARE = 0.6  # polls/s during the opening, as a share of the measured poll capacity (a page polls steadily)
JOINERS, POLLERS = 8000, 3000  # distinct customers in the join and poll capacity runs
PROBE_SECONDS, BIG_PRE_QUEUE = 4.0, 50_000
REDIS_URL = env("REDIS_URL", "redis://127.0.0.1:6379/0")
unavailable: list[int] = []  # 503s met while joining the setup's customers
ADMIN = {"Authorization": f"Bearer {issue_token(SECRET, sub='1', role='admin')}"}


def bearer(customer: int) -> bytes:
    return issue_token(SECRET, sub=str(customer), role="customer").encode()


def join_request(sid: int, token: bytes) -> bytes:
    return (b"POST /showtimes/%d/queue HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
            b"Content-Length: 0\r\n\r\n" % (sid, token))


def poll_request(ticket: str, token: bytes) -> bytes:
    return b"GET /queue/%s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n" % (ticket.encode(), token)


async def room(client: httpx.AsyncClient, sid: int, opens_at: datetime | None = None) -> None:
    body = {"enabled": True, "activeLimit": LIMIT, **({"opensAt": opens_at.isoformat()} if opens_at else {})}
    r = await client.put(f"/admin/showtimes/{sid}/waiting-room", json=body, headers=ADMIN)
    r.raise_for_status()


async def join_all(client: httpx.AsyncClient, sid: int, customers: list[int]) -> dict[int, str]:
    """Setup, not measured: the customers' tickets."""
    tickets: dict[int, str] = {}
    gate = asyncio.Semaphore(64)

    async def join(c: int) -> None:
        headers = {"Authorization": f"Bearer {bearer(c).decode()}"}
        async with gate:
            for _ in range(20):  # a 503 (Redis skipped after a slow answer on a busy machine): retry, as a page does
                r = await client.post(f"/showtimes/{sid}/queue", headers=headers)
                if r.status_code != 503:
                    break
                unavailable.append(1)
                await asyncio.sleep(0.2)
            r.raise_for_status()
            tickets[c] = r.json()["ticket"]

    await asyncio.gather(*(join(c) for c in customers))
    return tickets


Figure = tuple[float, float]  # responses/s, the server's CPU per response in µs (what survives a noisy machine)


async def capacity(port: int, pid: int, requests: list[bytes]) -> Figure:
    before = cpu_seconds(pid)
    stats = await asyncio.to_thread(wrk_capacity, port, requests, PROBE_SECONDS)
    return stats.rate, (cpu_seconds(pid) - before) * 1e6 / max(1, stats.done)


async def bare_figures(stack: ExitStack) -> tuple[Figure, Figure]:
    port, pid = started_server(stack, "bare_app:get_application", {}, app_dir=str(Path(__file__).parent))
    token = bearer(1)
    return (await capacity(port, pid, [join_request(1, token)]),
            await capacity(port, pid, [poll_request("t" * 60, token)]))


async def service_figures(port: int, pid: int, client: httpx.AsyncClient,
                          conn: asyncpg.Connection) -> tuple[Figure, Figure]:
    sid = await new_showtime(conn)
    await room(client, sid)
    pollers = [random.randint(10**9, 2**50) for _ in range(POLLERS)]
    tickets = await join_all(client, sid, pollers)
    joins = [join_request(sid, bearer(random.randint(10**9, 2**50))) for _ in range(JOINERS)]
    join = await capacity(port, pid, joins)
    return join, await capacity(port, pid, [poll_request(tickets[c], bearer(c)) for c in pollers])


async def opening(port: int, client: httpx.AsyncClient, conn: asyncpg.Connection, redis: aioredis.Redis,
                  rate: float) -> dict[str, float]:
    sid = await new_showtime(conn)
    opens_at = datetime.now(UTC) + timedelta(seconds=30)
    await room(client, sid, opens_at)  # far enough to join everyone first
    early = [random.randint(10**9, 2**50) for _ in range(EARLY)]
    tickets = await join_all(client, sid, early)
    opens_at = datetime.now(UTC) + timedelta(seconds=3)
    await room(client, sid, opens_at)  # the processes see it within WAITING_ROOM_CACHE_SECONDS (1 s)
    requests = [poll_request(tickets[c], bearer(c)) for c in early]
    seen: dict[bytes, float] = {}

    def classify(status: int, body: bytes) -> str:
        if b'"admitted":true' in body:
            token = body.split(b'"admissionToken":"', 1)[1].split(b'"', 1)[0]
            seen.setdefault(token, time.time())
        return str(status)

    recorded: list[tuple[float, int]] = []

    async def record() -> None:
        state = f"wr:{{{sid}}}:state"
        while time.time() < opens_at.timestamp() + 8:
            admitted = int(await redis.hget(state, "admitted") or 0)
            recorded.append((time.time(), admitted))
            await asyncio.sleep(0.005)

    generator = OpenLoop(classify)
    seconds = opens_at.timestamp() + 8 - time.time()
    answers, _ = await asyncio.gather(generator.run("127.0.0.1", port, 64, rate, seconds, requests), record())
    t0 = opens_at.timestamp()
    opened_at = int(await redis.hget(f"wr:{{{sid}}}:state", "opened_at") or 0) / 1000
    in_redis = next((t for t, n in recorded if n >= LIMIT), float("nan"))
    told = sorted(seen.values())
    latencies = sorted(us for _, us in answers)
    return {"opened": opened_at - t0, "first_n_redis": in_redis - t0,
            "first_told": (told[0] - t0) if told else float("nan"),
            "first_n_told": (told[LIMIT - 1] - t0) if len(told) >= LIMIT else float("nan"),
            "polls": len(answers), "p50_ms": latencies[len(latencies) // 2] / 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99)] / 1000}


async def big_opening_step() -> tuple[float, float, int, float]:
    """One opening step over BIG_PRE_QUEUE pre-opening joiners, in-process: Redis' time for the shuffle."""
    from hold_service.adapters.redis_guard import RedisGuard
    from hold_service.adapters.room_queue import RedisRoomQueue, room_key
    from hold_service.domain.waiting_room import RoomConfig, RoomFacts, StepOutcome
    from ticketing.redis_client import redis_client
    from ticketing.settings import ServiceSettings

    guard = RedisGuard(redis_client(ServiceSettings(redis_url=REDIS_URL), 5.0), 1.0)
    queue = RedisRoomQueue(guard, 0.25, 30)
    sid = random.randint(10**15, 2**52)
    now_ms = int(time.time() * 1000)
    members = {str(random.randint(10**9, 2**50)): now_ms for _ in range(BIG_PRE_QUEUE)}
    await guard.client.zadd(room_key(sid, "pre"), members)
    await guard.client.zadd(room_key(sid, "seen"), members)
    # No lease yet (as at a first opening): the step shuffles, then asks for one; the next step admits.
    facts = RoomFacts(config=RoomConfig(sid, True, LIMIT, None), lease_ms=0, seed="bench", available=300, held=0,
                      holders=[])
    runs: list[float] = []
    while True:  # the pre-opening joiners move a chunk per script run (room_step.lua)
        started = time.perf_counter()
        asked = await queue.step(facts, 180)
        runs.append(time.perf_counter() - started)
        if asked != "opening":
            break
    started = time.perf_counter()
    outcome = await queue.step(replace(facts, lease_ms=now_ms + 3_600_000), 180)
    admit = time.perf_counter() - started
    assert asked == "need_lease" and isinstance(outcome, StepOutcome) and outcome.admitted == LIMIT, outcome
    await guard.client.delete(*[room_key(sid, n) for n in ("state", "pre", "queue", "active", "tickets", "seen",
                                                           "pickup", "admits")])
    await guard.client.aclose()
    return sum(runs), max(runs), len(runs), admit


async def forget(conn: asyncpg.Connection) -> None:
    """Rooms and seats of the bench stay in the test database (no events were made: nobody held)."""
    await conn.execute("DELETE FROM waiting_room WHERE showtime_id IN (SELECT showtime_id FROM showtime "
                       "WHERE title = 'bench' AND created_at > now() - interval '1 hour')")


def line(what: str, bare: Figure, ours: Figure, note: str) -> str:
    return (f"{what:6s} bare {bare[0]:6.0f}/s {bare[1]:5.0f} us CPU   hold-service {ours[0]:6.0f}/s "
            f"{ours[1]:5.0f} us CPU   = {ours[0] / bare[0]:5.1%} of bare's rate, {ours[1] / bare[1]:4.1f}x its CPU "
            f"({note})")


async def main(figures: dict[str, object]) -> None:
    if not shutil.which("wrk"):
        sys.exit("bench-queue needs wrk (make bench-tools)")
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    redis = aioredis.from_url(REDIS_URL)
    service_env = {"HOLD_DATABASE_URL": DSN, "LOG_LEVEL": "WARNING", "APP_ENV": "dev",
                   **UNLIMITED_HOLDS, "WAITING_ROOM_ABANDON_SECONDS": "60"}
    with ExitStack() as stack:
        bare_join, bare_poll = await bare_figures(stack)
    with ExitStack() as stack:
        port, pid = started_server(stack, "hold_service.entrypoints.api.app:get_application", service_env)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            join, poll = await service_figures(port, pid, client, conn)
            poll_rate_used = poll[0] * POLL_SHARE
            opened = await opening(port, client, conn, redis, poll_rate_used)
    shuffle, longest, runs, admit = await big_opening_step()
    await forget(conn)
    await conn.close()
    await redis.aclose()
    print(f"machine: {os.cpu_count()} cores; wrk closed loop, 1 thread, 64 connections, {PROBE_SECONDS:.0f} s; "
          f"2 uvicorn workers; CPU: the server's user+system time per response")
    print("\n" + line("joins", bare_join, join, f"{JOINERS} distinct customers, then their repeats: idempotent"))
    print(line("polls", bare_poll, poll, f"{POLLERS} tickets, the room stepping meanwhile"))
    print(f"\nopening: {EARLY} customers joined before it, activeLimit {LIMIT}, polls at {poll_rate_used:.0f}/s "
          f"({POLL_SHARE:.0%} of capacity: each customer about every {EARLY / poll_rate_used:.1f} s), open loop")
    print(f"  shuffle + first admissions done (Redis):      {opened['opened']:6.3f} s after opensAt")
    print(f"  first {LIMIT} admitted (Redis):                {opened['first_n_redis']:6.3f} s")
    print(f"  first customer told he is in:                 {opened['first_told']:6.3f} s")
    print(f"  first {LIMIT} customers told they are in:      {opened['first_n_told']:6.3f} s")
    print(f"  {opened['polls']:.0f} polls, p50 {opened['p50_ms']:.1f} ms, p99 {opened['p99_ms']:.1f} ms "
          "(from the intended send time)")
    print(f"\nopening alone, {BIG_PRE_QUEUE} pre-opening joiners: the shuffle {shuffle * 1000:.0f} ms in {runs} script "
          f"runs (the longest {longest * 1000:.0f} ms: Redis answers nobody else meanwhile), then {LIMIT} admitted in "
          f"{admit * 1000:.1f} ms")
    if unavailable:
        print(f"(setup: {len(unavailable)} joins answered 503 and were retried: Redis skipped after a slow answer)")
    figures.update({"join": shape(join, bare_join), "poll": shape(poll, bare_poll), "opening": opened,
                    "big_opening": {"pre_queue": BIG_PRE_QUEUE, "shuffle_s": shuffle, "longest_run_s": longest,
                                    "script_runs": runs, "admit_s": admit}})
    print(orjson.dumps(figures).decode())


def shape(ours: Figure, bare: Figure) -> dict[str, float]:
    """hold-service's rate and CPU per response beside a bare endpoint of the same shape (var/bench/queue.json)."""
    return {"per_s": round(ours[0]), "cpu_us": round(ours[1], 1), "bare_per_s": round(bare[0]),
            "bare_cpu_us": round(bare[1], 1)}


async def run_and_save() -> None:
    with Results("queue") as r:
        await main(r.data)


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
