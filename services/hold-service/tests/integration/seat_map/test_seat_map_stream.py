"""GET /showtimes/{id}/seats/stream over real connections: snapshot plus changes equals a fresh GET after a
storm of holds, cancels, confirmations and expiries (versions in order, no gap); a gap resets the stream;
a client that does not read is dropped; heartbeats; SIGTERM ends streams instead of waiting for them."""

from __future__ import annotations

import asyncio
import random
import signal
import socket
import time
import uuid

import httpx
import pytest
from hold_service.adapters.repository import PgHoldsUnitOfWork, Q
from hold_service.domain.commands import ConfirmBooking
from hold_service.service_layer.lifecycle import confirm_booking, sweep_expired
from ticketing_testing import eventually, free_port, service_process
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


async def test_snapshot_plus_changes_equals_a_fresh_get_after_a_storm(start, serve, sse, db, h) -> None:
    async with start(hold_ttl_seconds=1, sweep_batch_size=100_000, hold_rate_limit_per_minute=100_000) as writer, \
            serve() as reader:
        sid = await writer.showtime({row: 10 for row in "ABCDEF"})
        stream = f"{reader.url}/showtimes/{sid}/seats/stream"
        early = await sse(stream).until(lambda s: s.of("snapshot"))
        storming = asyncio.Event()

        async def customer(n: int) -> None:
            rng, who = random.Random(n), h.new_id()
            for _ in range(8):
                row, first = rng.choice("ABCDEF"), rng.randint(1, 8)
                r = await writer.hold(sid, [f"{row}{i}" for i in range(first, first + rng.randint(1, 3))], who)
                if r.status_code != 201:
                    continue
                hold, fate = r.json(), rng.random()
                if fate < 0.3:
                    await writer.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(who))
                elif fate < 0.4:
                    async with writer.service.pool.acquire() as conn, conn.transaction():
                        await confirm_booking(ConfirmBooking(uuid.UUID(hold["bookingId"]), uuid.uuid4(), 1200),
                                              PgHoldsUnitOfWork(conn=conn))
                await asyncio.sleep(rng.random() * 0.4)  # the rest expire (TTL 1 s): swept, or re-held lazily

        async def sweeper() -> None:
            while storming.is_set():
                await sweep_expired(writer.deps)
                await asyncio.sleep(0.3)

        storming.set()
        sweeping = asyncio.ensure_future(sweeper())
        customers = [asyncio.ensure_future(customer(n)) for n in range(30)]
        await asyncio.sleep(1.5)
        late = sse(stream)  # joins mid-storm: its snapshot is some later version
        await asyncio.gather(*customers)
        # The holds left to expire have by now (TTL 1 s), and the sweeper, still going, releases them as EXPIRED:
        # on a busy machine the customers' last holds came so late that the storm ended before any expired.
        await asyncio.sleep(1.5)
        storming.clear()
        await sweeping
        await numbered(db)
        row = await db.fetchrow(Q.seat_map, sid)
        version, expected = row["version"], {s[0]: s[1] for s in row["seats"]}
        kinds = await db.fetch(
            "SELECT e->>'type' AS type, e->'data'->>'reason' AS reason, count(*) FROM outbox, "
            "LATERAL (SELECT convert_from(payload, 'UTF8')::jsonb AS e) p "
            "WHERE (e->>'showtimeId')::bigint = $1 GROUP BY 1, 2", sid)
        made = {(k["type"], k["reason"]): k["count"] for k in kinds}
        assert version > 60 and all(made.get(kind) for kind in [
            ("SeatsHeld", None), ("SeatsReleased", "CANCELLED"), ("SeatsReleased", "EXPIRED"),
            ("BookingConfirmed", None)]), (version, made)
        for client in (early, late):
            await client.until(lambda s: s.version() >= version)
            assert client.replay() == (version, expected)  # also asserts each change is the next version
        assert late.of("snapshot")[0]["version"] > 0
        for app in (writer.client, httpx.AsyncClient(base_url=reader.url)):
            body = (await app.get(f"/showtimes/{sid}/seats")).json()
            assert (body["version"], {s["code"]: s["status"] for s in body["seats"]}) == (version, expected)
        await early.close()
        await late.close()


async def test_a_gap_ends_the_stream_and_a_new_one_starts_from_a_fresh_snapshot(start, serve, sse, db) -> None:
    async with start() as writer, serve() as reader:
        sid = await writer.showtime({"F": 4})
        stream = f"{reader.url}/showtimes/{sid}/seats/stream"
        first = await sse(stream).until(lambda s: s.of("snapshot"))
        assert (await writer.hold(sid, ["F1"])).status_code == 201
        await first.until(lambda s: s.version() == 1)
        await db.execute("SELECT pg_notify('hold_seat_map', $1)", f"{sid}:3:HELD:F2")  # version 2 never came
        await first.until(lambda s: s.ended)
        assert first.version() == 1  # the server did not pass the gap on: it ended the stream
        again = await sse(stream).until(lambda s: s.of("snapshot"))
        assert again.of("snapshot")[0]["version"] == 1  # reloaded from Postgres
        await again.close()


async def test_a_client_that_does_not_read_is_dropped_others_get_everything(start, serve, sse, db) -> None:
    async with start() as writer, serve(send_buffer=8192) as reader:
        sid = await writer.showtime({"A": 1200})
        reader_host, reader_port = reader.url.removeprefix("http://").split(":")
        reading = await sse(f"{reader.url}/showtimes/{sid}/seats/stream").until(lambda s: s.of("snapshot"))
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and it never reads
        try:
            stuck.connect((reader_host, int(reader_port)))
            stuck.sendall(f"GET /showtimes/{sid}/seats/stream HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            maps = reader.service.seat_maps
            await eventually(lambda: _is(maps.streams == 2), timeout=5, interval=0.02)
            # Changes of 1,200 seats each (~45 KB frames), told the way Postgres tells them: 1.3 MB, more than the
            # kernel's socket buffers (16 + 8 KiB here), the connection's 64 KiB and the stream's 256 KiB
            # hold; its writes hang, it falls behind and is dropped. The reading client keeps up.
            seats = ",".join(f"A{n}" for n in range(1, 1201))
            for version in range(1, 31):
                status = "HELD" if version % 2 else "AVAILABLE"
                await db.execute("SELECT pg_notify('hold_seat_map', $1)", f"{sid}:{version}:{status}:{seats}")
                await reading.until(lambda s, v=version: s.version() == v)
            assert [c["version"] for c in reading.of("change")] == list(range(1, 31))
            await eventually(lambda: _is(maps.streams == 1), timeout=10, interval=0.05)
            stuck.setblocking(False)
            loop, received = asyncio.get_running_loop(), 0
            while chunk := await asyncio.wait_for(loop.sock_recv(stuck, 1 << 20), 10):
                received += len(chunk)  # what was in flight, then the end: the server closed the connection
            assert 0 < received < 30 * 45_000
        finally:
            stuck.close()  # else the server would wait for it at shutdown
        await reading.close()


async def test_idle_streams_get_heartbeats(start, serve, sse) -> None:
    async with start() as writer, serve(seat_map_heartbeat_seconds=0.5) as reader:
        sid = await writer.showtime({"F": 2})
        client = await sse(f"{reader.url}/showtimes/{sid}/seats/stream").until(lambda s: s.comments >= 2)
        assert client.of("change") == []
        await client.close()


async def test_stream_errors_are_the_contracts(serve, h) -> None:
    async with serve() as reader, httpx.AsyncClient(base_url=reader.url) as client:
        missing = await client.get(f"/showtimes/{h.new_id()}/seats/stream")
        assert missing.status_code == 404 and missing.json()["error"] == "NOT_FOUND"
        bad = await client.get("/showtimes/abc/seats/stream")
        assert bad.status_code == 422 and bad.json()["error"] == "VALIDATION_ERROR"


async def test_sigterm_ends_open_streams_and_the_process_exits_at_once(hold_dsn, redis_url, start) -> None:
    async with start() as writer:
        sid = await writer.showtime({"F": 2})
    port = free_port()
    args = ["-m", "uvicorn", "--factory", "hold_service.entrypoints.api.app:get_application",
            "--host", "127.0.0.1", "--port", str(port)]
    env = {"HOLD_DATABASE_URL": hold_dsn, "REDIS_URL": redis_url, "APP_ENV": "dev", "LOG_LEVEL": "WARNING"}
    with service_process(args, env, ready_url=f"http://127.0.0.1:{port}/healthz") as proc:
        async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None)) as client, \
                client.stream("GET", f"http://127.0.0.1:{port}/showtimes/{sid}/seats/stream") as response:
            lines = response.aiter_lines()
            async for line in lines:
                if line == "event: snapshot":
                    break
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(_drain(lines), 5)  # ends cleanly (the last chunk, not a reset), at once
        code = await asyncio.to_thread(proc.wait, 10)
        # uvicorn shuts down gracefully, then re-raises the signal it caught: killed by SIGTERM, on time.
        assert code == -signal.SIGTERM and time.monotonic() - sent < 5


async def _drain(lines) -> None:  # type: ignore[no-untyped-def]
    async for _ in lines:
        pass


async def _is(value: bool) -> bool:
    return value


async def test_the_snapshot_draws_the_hall_and_a_cancelled_booking_is_one_plain_change(start, serve, sse, h) -> None:
    async with start() as writer, serve() as reader:
        sid = await writer.showtime_of(layout=[{"row": "A", "blocks": [{"from": 1, "to": 2, "category": "VIP"},
                                                                       {"gap": 1}, {"from": 3, "to": 3}]}],
                                       prices={"STANDARD": {"ADULT": 1200}, "VIP": {"ADULT": 1800}})
        stream = await sse(f"{reader.url}/showtimes/{sid}/seats/stream").until(lambda s: s.of("snapshot"))
        (snapshot,) = stream.of("snapshot")
        assert snapshot["prices"] == {"STANDARD": {"ADULT": 1200}, "VIP": {"ADULT": 1800}}
        assert [(s["code"], s["category"], s["row"], s["x"]) for s in snapshot["seats"]] == [
            ("A1", "VIP", "A", 1), ("A2", "VIP", "A", 2), ("A3", "STANDARD", "A", 4)]
        me = h.new_id()
        held = (await writer.hold(sid, ["A1", "A3"], me)).json()
        assert await writer.book(held["bookingId"], 3000) == "confirmed"
        r = await writer.client.post(f"/bookings/{held['bookingId']}/cancel", headers=h.auth(me))
        assert r.status_code == 202, r.text
        await stream.until(lambda s: s.version() == 3)
        assert stream.of("change") == [  # as every change was: version and seats, nothing more
            {"version": 1, "seats": [{"code": "A1", "status": "HELD"}, {"code": "A3", "status": "HELD"}]},
            {"version": 2, "seats": [{"code": "A1", "status": "BOOKED"}, {"code": "A3", "status": "BOOKED"}]},
            {"version": 3, "seats": [{"code": "A1", "status": "AVAILABLE"}, {"code": "A3", "status": "AVAILABLE"}]}]
        await stream.close()
