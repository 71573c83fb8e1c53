"""R4 and the gate's edges: Redis flushed, restarted or down mid-storm; stale releases."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
import uuid
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis
from hold_service.adapters.seat_gate import seat_key
from ticketing_testing import REPO_ROOT
from ticketing_testing.workers import own_redis_db

pytestmark = pytest.mark.integration
INFRA = REPO_ROOT / "deploy" / "local" / "infra.sh"


def _db15(url: str) -> str:
    """A logical db of this worker's own (15 outside xdist), flushed below."""
    return own_redis_db(url, 0)


async def _storm(svc, sid: int, waves: int, fault) -> list:  # type: ignore[no-untyped-def]
    rng, codes, responses = random.Random(), [f"A{i}" for i in range(1, 13)], []
    for wave in range(waves):
        batch = [svc.hold(sid, rng.sample(codes, rng.randint(1, 3))) for _ in range(150)]
        results = await asyncio.gather(*batch, fault(wave))
        responses += results[:-1]
    return responses


async def _check(db, h, sid: int, responses) -> None:  # type: ignore[no-untyped-def]
    assert {r.status_code for r in responses} <= {201, 409}
    won = [s for r in responses if r.status_code == 201 for s in r.json()["seats"]]
    assert len(won) == len(set(won)), "a seat was granted twice"
    await h.assert_single_holders(db, sid)


async def test_r4_flush_mid_storm_leaves_one_holder_per_seat(start, db, h, redis_url) -> None:
    url = _db15(redis_url)
    raw = aioredis.from_url(url)
    async def flush(wave: int) -> None:
        if wave == 1:
            await asyncio.sleep(0.01)
            await raw.flushdb()  # FLUSHALL on the worker's own db only, so other tests keep their keys

    async with start(redis_url=url, hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime({"A": 12})
        responses = await _storm(svc, sid, 4, flush)
        await _check(db, h, sid, responses)
    await raw.aclose()


@pytest.mark.reliability
@pytest.mark.serial  # restarts the Redis every other test uses
async def test_r4_redis_restart_mid_storm_keeps_serving_and_scripts_reload(start, db, h, redis_url) -> None:
    async def restart(wave: int) -> None:
        if wave == 1:
            # The Redis of REDIS_URL (a worktree's own, beside the dev one on 6379).
            port = urlsplit(redis_url).port or 6379
            await asyncio.to_thread(subprocess.run, [str(INFRA), "redis-restart"], check=True,
                                    capture_output=True, timeout=60, env={**os.environ, "REDIS_PORT": str(port)})

    async with start(redis_url=_db15(redis_url), hold_rate_limit_per_minute=1000,
                     redis_retry_after_seconds=0.2) as svc:
        sid = await svc.showtime({"A": 12, "B": 2})
        responses = await _storm(svc, sid, 3, restart)
        await _check(db, h, sid, responses)
        for _ in range(50):  # pooled connections to the old Redis fail once each, then reconnect
            try:
                await svc.redis.ping()
                break
            except Exception:
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # past the guard's skip window
        assert (await svc.hold(sid, ["B1"])).status_code == 201
        again = await svc.hold(sid, ["B1"])  # EVALSHA after the restart: NOSCRIPT, reloaded, gate answers
        assert again.status_code == 409 and again.json()["decidedBy"] == "gate"


async def test_gate_down_postgres_decides(start, db, h) -> None:
    async with start(redis_url="redis://127.0.0.1:1/0", redis_socket_timeout_seconds=0.05) as svc:
        sid = await svc.showtime()
        first, second = await asyncio.gather(svc.hold(sid, ["F1"]), svc.hold(sid, ["F1"]))
        assert sorted([first.status_code, second.status_code]) == [201, 409]
        r = await svc.client.get(f"/showtimes/{sid}/seats", headers=h.auth(4))
        assert r.status_code == 200
    await h.assert_single_holders(db, sid)


async def test_stale_release_cannot_free_another_holds_key(start, redis_url) -> None:
    async with start(redis_url=_db15(redis_url)) as svc:
        gate, sid = svc.deps.admission, 10**12 + random.randint(0, 10**6)
        old, new = uuid.uuid4(), uuid.uuid4()
        assert (await gate.admit(7, sid, ["C1"], old, 0.05)).taken == []
        await asyncio.sleep(0.1)  # the old key's TTL passed
        assert (await gate.admit(8, sid, ["C1", "C2"], new, 60)).taken == []
        await gate.release(sid, ["C1"], old)
        assert await svc.redis.get(seat_key(sid, "C1")) == str(new)
        assert (await gate.admit(9, sid, ["C2", "C3"], uuid.uuid4(), 60)).taken == ["C2"]
        assert await svc.redis.exists(seat_key(sid, "C3")) == 0  # all-or-nothing in Redis too


async def test_a_release_redis_missed_is_made_once_it_answers(start, redis_url) -> None:
    """A hold released while hold-service could not reach Redis (a connect timeout under load): its keys go
    once Redis answers, not when they lapse (they said "taken" for a free seat for the hold's whole time)."""
    async with start(redis_url=_db15(redis_url)) as svc:
        gate, sid, hold = svc.deps.admission, 10**12 + random.randint(0, 10**6), uuid.uuid4()
        assert (await gate.admit(7, sid, ["D1", "D2"], hold, 600)).taken == []
        guard = svc.deps.admission.gate.guard
        guard._down_until = time.monotonic() + 600  # the guard skips Redis now, as after a failed call
        await gate.release(sid, ["D1", "D2"], hold)
        assert await svc.redis.get(seat_key(sid, "D1")) == str(hold)  # missed
        for _ in range(50):
            if not await svc.redis.exists(seat_key(sid, "D1"), seat_key(sid, "D2")):
                break
            await asyncio.sleep(0.1)
        assert await svc.redis.exists(seat_key(sid, "D1"), seat_key(sid, "D2")) == 0


async def test_requests_arriving_together_share_one_round_trip_and_gate_run(start, h) -> None:
    """Admission batches the requests of one showtime per loop turn: one pipelined exchange with each
    request's rate-limit scripts (customer, address) and ONE gate script, which takes them in arrival order (all or
    nothing each): here A1+A2 wins, A2+A3 loses on A2, A4 wins, and a second showtime is its own batch."""
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid, other = await svc.showtime({"A": 6}), await svc.showtime({"A": 6})
        admission = svc.deps.admission
        exchanges: list[int] = []
        run_together = admission._run_together

        async def counted(calls: list[tuple[object, ...]]) -> list[object]:
            exchanges.append(len(calls))
            return await run_together(calls)

        admission._run_together = counted
        asks = [(sid, ["A1", "A2"]), (sid, ["A2", "A3"]), (sid, ["A4"]), (other, ["A2"])]
        got = await asyncio.gather(*(admission.admit(h.new_id(), s, seats, uuid.uuid4(), 60, address="192.0.2.7")
                                     for s, seats in asks))
        assert [(a.wait, a.taken) for a in got] == [(None, []), (None, ["A2"]), (None, []), (None, [])]
        # Per request its customer's and its address's rate-limit runs, then 1 gate run; 2 + 1 for the other
        assert sorted(exchanges) == [3, 7]


async def test_with_the_gate_off_admission_takes_the_same_path_and_sets_no_seat_key(start, h) -> None:
    """SEAT_GATE_ENABLED=false changes the edge only: the same admission, its requests of one loop turn in one
    exchange with their rate-limit runs (and the gate script only for a waiting-room slot to check), no seat
    named and no seat key left in Redis; the limits still refuse, and the writer is the same."""
    async with start(hold_rate_limit_per_minute=2) as on, start(seat_gate_enabled=False,
                                                                 hold_rate_limit_per_minute=2) as svc:
        assert (type(svc.deps.admission), type(svc.deps.writer)) == (type(on.deps.admission), type(on.deps.writer))
        sid = await svc.showtime({"A": 6})
        admission, exchanges = svc.deps.admission, []
        run_together = admission._run_together

        async def counted(calls: list[tuple[object, ...]]) -> list[object]:
            exchanges.append(len(calls))
            return await run_together(calls)

        admission._run_together = counted
        customer = h.new_id()
        got = await asyncio.gather(*(admission.admit(customer, sid, [f"A{n}"], uuid.uuid4(), 60, address="192.0.2.8")
                                     for n in (1, 2, 3)))
        assert [(a.wait is None, a.taken) for a in got] == [(True, []), (True, []), (False, [])]
        assert exchanges == [6]  # 3 customer and 3 address runs, no gate run: no slot to check
        assert await svc.redis.keys(f"seat:{{{sid}}}:*") == []
        # Two holds of one seat reach Postgres, which decides.
        first, second = await asyncio.gather(svc.hold(sid, ["A5"]), svc.hold(sid, ["A5"]))
        assert sorted([first.status_code, second.status_code]) == [201, 409]
        assert "postgres" in (first.json().get("decidedBy"), second.json().get("decidedBy"))
