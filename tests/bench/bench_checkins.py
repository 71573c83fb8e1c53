"""make bench-checkins: check-ins per second at the door's busiest moment, beside a bare endpoint.

The busiest moment is the crowd before a showtime: every door scanning distinct tickets as fast as people
come. Starts itself: hold-service (2 uvicorn workers, the test database) and the bare FastAPI endpoint of the
same shape (bare_app.py), measured in the same run with the same client, `wrk` (closed loop, pre-built
requests, as bench-holds). Three figures of hold-service:

- first scans: distinct tickets, each admitted once (signature, booking, window, the conditional UPDATE and
  TicketCheckedIn in the outbox, one transaction each);
- second scans: the same tickets again (409 ALREADY_CHECKED_IN: signature and one read);
- offline sync: SCANNERS scanners back online at once, each sending its queue as POST /checkins/batch of BATCH
  scans of distinct tickets, one batch after the other (scans/s; every batch answered before the clock stops).

The need they are compared with: a hall of 300 seats whose audience all comes through the door in the 10
minutes before the start, one booking per person at worst: 0.5 admissions/s. Prints figures; never pass/fail.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import orjson
import uvloop
from bench_holds import DSN, MIGRATIONS, SECRET, started_server, wrk_capacity
from bench_vouchers import cpu_seconds
from results import Results
from ticketing.auth import issue_token
from ticketing.tickets import DEV_QR_SIGNING_KEY, TicketKeyring, TicketPayload
from ticketing_testing import apply_migrations, shared_migrations

TICKETS, BATCH, SECONDS, SCANNERS = 16_000, 100, 4.0, 4
HALL_SEATS, DOOR_MINUTES = 300, 10
NEED_PER_S = HALL_SEATS / (DOOR_MINUTES * 60)  # one booking per person at worst
STAFF = issue_token(SECRET, sub="9", role="staff").encode()
Figure = tuple[float, float, dict[str, int]]  # responses/s, the server's CPU per response in µs, answers by status


def post(path: str, body: object) -> bytes:
    raw = orjson.dumps(body)
    return (b"POST %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path.encode(), STAFF, len(raw), raw))


async def booked_showtime(conn: asyncpg.Connection, n: int) -> tuple[int, list[str]]:
    """A showtime starting in 20 minutes with `n` booked bookings of two seats; their ticket texts."""
    sid = random.randint(10**15, 2**52)
    await conn.execute("INSERT INTO showtime (showtime_id, title, starts_at, price_cents, prices, duration_minutes) "
                       "VALUES ($1, 'bench', now() + interval '20 minutes', 1000, "
                       "'{\"STANDARD\": {\"ADULT\": 1000}}', 120)", sid)
    ids = [uuid.uuid4() for _ in range(n)]
    await conn.execute(
        "INSERT INTO booking (hold_id, booking_id, customer_id, showtime_id, seats, amount_cents, status, expires_at, "
        "tickets) SELECT gen_random_uuid(), b, 7, $1, ARRAY['F1', 'F2'], 2000, 'BOOKED', now(), "
        "'[{\"seat\": \"F1\", \"category\": \"STANDARD\", \"ticketType\": \"ADULT\", \"priceCents\": 1000},"
        " {\"seat\": \"F2\", \"category\": \"STANDARD\", \"ticketType\": \"ADULT\", \"priceCents\": 1000}]'"
        " FROM unnest($2::uuid[]) b", sid, ids)
    keys = TicketKeyring.of(DEV_QR_SIGNING_KEY)
    return sid, [keys.sign(TicketPayload(str(b), sid, ("F1", "F2"))) for b in ids]


async def capacity(port: int, pid: int, requests: list[bytes]) -> Figure:
    before = cpu_seconds(pid)
    stats = await asyncio.to_thread(wrk_capacity, port, requests, SECONDS)
    return stats.rate, (cpu_seconds(pid) - before) * 1e6 / max(1, stats.done), stats.codes


async def sync_all(port: int, pid: int, batches: list[dict[str, object]]) -> Figure:
    """SCANNERS scanners each sending batches one after the other until all are sent: scans/s, CPU per scan, the
    scans' answers."""
    queue, answers = list(batches), Counter[str]()
    headers = {"Authorization": f"Bearer {STAFF.decode()}"}

    async def scanner(client: httpx.AsyncClient) -> None:
        while queue:
            r = await client.post("/checkins/batch", json=queue.pop(), headers=headers)
            answers.update(str(x.get("error", "admitted")) for x in r.json()["results"])

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        before, started = cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(scanner(client) for _ in range(SCANNERS)))
        seconds, cpu = time.perf_counter() - started, cpu_seconds(pid) - before
    scans = sum(answers.values())
    return scans / seconds, cpu * 1e6 / scans, dict(answers)


def line(what: str, ours: Figure, bare: Figure) -> str:
    return (f"{what:14s} {ours[0]:7.0f}/s  {ours[1]:6.0f} us CPU each   = {ours[0] / bare[0]:5.1%} of bare's rate, "
            f"{ours[1] / bare[1]:4.1f}x its CPU   {ours[0] / NEED_PER_S:8.0f}x the need   answers {ours[2]}")


async def main(figures: dict[str, object]) -> None:
    if not shutil.which("wrk"):
        sys.exit("bench-checkins needs wrk (make bench-tools)")
    apply_migrations(DSN, shared_migrations(), MIGRATIONS)
    conn = await asyncpg.connect(DSN)
    online_sid, online = await booked_showtime(conn, TICKETS)
    batch_sid, offline = await booked_showtime(conn, TICKETS // 2)
    scans = [post("/checkins", {"ticket": t, "showtimeId": online_sid, "door": f"D{n % 8}"})
             for n, t in enumerate(online)]
    now = datetime.now(UTC).isoformat()
    batches: list[dict[str, object]] = [
        {"scans": [{"ticket": t, "showtimeId": batch_sid, "door": f"Z{i % SCANNERS}", "at": now}
                   for t in offline[i:i + BATCH]]} for i in range(0, len(offline), BATCH)]
    with ExitStack() as stack:
        port, pid = started_server(stack, "bare_app:get_application", {}, app_dir=str(Path(__file__).parent))
        bare = await capacity(port, pid, scans)
    service_env = {"HOLD_DATABASE_URL": DSN, "LOG_LEVEL": "WARNING", "APP_ENV": "dev",
                   "QR_SIGNING_KEY": DEV_QR_SIGNING_KEY}  # the key the bench signed its tickets with
    with ExitStack() as stack:
        port, pid = started_server(stack, "hold_service.entrypoints.api.app:get_application", service_env)
        first = await capacity(port, pid, scans)
        second = await capacity(port, pid, scans)
        batch = await sync_all(port, pid, batches)
    admitted, synced = [await conn.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1 AND checked_in_at "
                                            "IS NOT NULL", sid) for sid in (online_sid, batch_sid)]
    events = await conn.fetchval("SELECT count(*) FROM outbox WHERE published_at IS NULL AND convert_from(payload, "
                                 "'UTF8')::jsonb ->> 'type' = 'TicketCheckedIn' AND (convert_from(payload, 'UTF8')"
                                 "::jsonb ->> 'showtimeId')::bigint = $1", online_sid)
    await conn.execute("DELETE FROM outbox WHERE published_at IS NULL AND (convert_from(payload, 'UTF8')::jsonb ->> "
                       "'showtimeId')::bigint = ANY($1::bigint[])", [online_sid, batch_sid])  # no relay runs here
    await conn.close()
    print(f"machine: {os.cpu_count()} cores, shared with other work; wrk closed loop, 1 thread, 64 connections, "
          f"{SECONDS:.0f} s each; 2 uvicorn workers; CPU: the server's user+system time per answer")
    print(f"the need: {HALL_SEATS} seats through the door in {DOOR_MINUTES} minutes = {NEED_PER_S:.1f} admissions/s\n")
    print(f"{'bare endpoint':14s} {bare[0]:7.0f}/s  {bare[1]:6.0f} us CPU each")
    print(line("first scans", first, bare))
    print(line("second scans", second, bare))
    print(line(f"batch of {BATCH}", batch, bare) + f"  (per scan; {SCANNERS} scanners syncing at once)")
    print(f"\n{admitted} bookings admitted by the first scans, {events} TicketCheckedIn written (one each); "
          f"{synced} by the batches")
    if not (admitted and synced):
        sys.exit("bench-checkins: no ticket was admitted (the figures above are of refusals): check the setup")
    figures.update({"need_per_s": NEED_PER_S, "bare": shape(bare), "first": shape(first), "second": shape(second),
                    "batch_scans": shape(batch), "admitted": admitted,
                    "events": events, "synced": synced})
    print(orjson.dumps(figures).decode())


def shape(f: Figure) -> dict[str, object]:
    return {"per_s": round(f[0]), "cpu_us": round(f[1], 1), "answers": f[2]}


async def run_and_save() -> None:
    with Results("checkins") as r:
        await main(r.data)


if __name__ == "__main__":
    sys.exit(uvloop.run(run_and_save()))
