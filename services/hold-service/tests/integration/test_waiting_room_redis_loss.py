"""The waiting room when Redis loses everything or goes away, on a redis-server this test starts and owns
(the shared Redis is never flushed or restarted).

What the room does: its configuration is in Postgres and survives. When Redis comes back empty, the first
step rebuilds the room and admits nobody until the lease of the tokens handed out before has passed (they
are honoured until they lapse), so old and new admissions are never more than the limit together; each
customer's next poll puts him back at his place (his ticket carries it). While Redis is unreachable,
joining and polling answer 503 (the page retries), holds with a valid token are taken on the token's word,
holds without one are refused, and Postgres decides every seat as always.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime

import pytest
import redis
from ticketing_testing import eventually, free_port, stop_process

pytestmark = pytest.mark.integration


class OwnRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    if subprocess.run(["which", "redis-server"], capture_output=True).returncode:
        pytest.fail("redis-server is not installed (make infra installs it)")
    server = OwnRedis()
    server.start()
    yield server
    if server.proc is not None:
        stop_process(server.proc)


async def test_redis_loses_the_room_nobody_extra_comes_in_and_everyone_keeps_his_place(
        start, db, h, rooms, own_redis) -> None:
    limit = 2
    async with start(redis_url=own_redis.url, waiting_room_step_seconds=0.05, admission_token_ttl_seconds=3,
                     redis_retry_after_seconds=0.1) as svc:
        sid = await svc.showtime({"A": 10})
        await rooms.configure(svc, sid, limit)
        customers = [h.new_id() for _ in range(6)]
        tickets = {c: (await rooms.join(svc.client, sid, c)).json()["ticket"] for c in customers}
        slots: list[tuple[float, float]] = []  # (told admitted, slot ends), epoch seconds
        tokens = {}
        for c in customers[:limit]:
            r = (await rooms.poll(svc.client, tickets[c], c)).json()
            assert r["admitted"], r
            tokens[c] = r["admissionToken"]
            slots.append((time.time(), datetime.fromisoformat(r["expiresAt"]).timestamp()))
        await svc.redis.flushall()  # our own Redis: the queue, the slots, the tickets, all gone

        # A token from before is still honoured (until it lapses).
        assert (await svc.hold(sid, ["A1"], customers[0], **{"X-Admission-Token": tokens[customers[0]]})
                ).status_code == 201
        # The waiting ones poll again (in any order): the room is rebuilt, each gets his place back...
        for c in reversed(customers[limit:]):
            assert (await rooms.poll(svc.client, tickets[c], c)).status_code == 200
        got = [(await rooms.poll(svc.client, tickets[c], c)).json() for c in customers[limit:]]
        assert [g["position"] for g in got] == [1, 2, 3, 4] and not any(g["admitted"] for g in got)
        assert (await svc.hold(sid, ["A2"], customers[1], **{"X-Admission-Token": tokens[customers[1]]})
                ).status_code == 201
        # ...and nobody new comes in until every token handed out before the loss has lapsed.
        admitted_at: dict[int, float] = {}
        while len(admitted_at) < 2:
            for c in customers[limit:]:
                r = (await rooms.poll(svc.client, tickets[c], c)).json()
                if r["admitted"] and c not in admitted_at:
                    admitted_at[c] = time.time()
                    slots.append((time.time(), time.time() + 3))
            await asyncio.sleep(0.05)
        assert sorted(admitted_at, key=admitted_at.get) == customers[limit:limit + 2]  # places kept
        assert min(admitted_at.values()) >= max(end for _, end in slots[:limit]) - 0.05
        assert h.most_at_once(slots) <= limit
        overview = (await svc.client.get(f"/admin/showtimes/{sid}/waiting-room", headers=h.auth(1, "admin"))).json()
        assert overview["enabled"] and overview["activeLimit"] == limit  # from Postgres
    await h.assert_single_holders(db, sid)


async def test_redis_down_the_room_pauses_and_postgres_still_decides(start, db, h, rooms, own_redis) -> None:
    async with start(redis_url=own_redis.url, waiting_room_step_seconds=0.05, redis_retry_after_seconds=0.1,
                     redis_socket_timeout_seconds=0.2) as svc:
        sid = await svc.showtime({"A": 10})
        await rooms.configure(svc, sid, 1)
        a, b, c = h.new_id(), h.new_id(), h.new_id()
        ticket_a = (await rooms.join(svc.client, sid, a)).json()["ticket"]
        ticket_b = (await rooms.join(svc.client, sid, b)).json()["ticket"]
        token = await rooms.admitted(svc.client, ticket_a, a)
        own_redis.stop()
        for r in (await rooms.poll(svc.client, ticket_b, b), await rooms.join(svc.client, sid, c)):
            assert r.status_code == 503 and r.json()["error"] == "UNAVAILABLE" and r.headers["Retry-After"]
        assert (await svc.hold(sid, ["A1"], b)).status_code == 403  # no token: no way in
        first, second = await asyncio.gather(svc.hold(sid, ["A2"], a, **{"X-Admission-Token": token}),
                                             svc.hold(sid, ["A2"], a, **{"X-Admission-Token": token}))
        assert sorted([first.status_code, second.status_code]) == [201, 409]  # Postgres decides
        own_redis.start()  # back, empty

        async def back_in_line() -> dict | None:
            r = await rooms.poll(svc.client, ticket_b, b)
            return r.json() if r.status_code == 200 and r.json()["position"] == 1 else None

        # b is back at his place; a's token may still be out, so the rebuilt room lets nobody in yet.
        assert (await eventually(back_in_line, timeout=10))["admitted"] is False
    await h.assert_single_holders(db, sid)
