"""The waiting room under a crowd, with two API processes (two apps on one Redis and one Postgres):
never more than the active limit admitted, everyone admitted or told sold out, a fair opening then first
come, first served."""

from __future__ import annotations

import asyncio
import hashlib
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import pytest
from hold_service.adapters.room_queue import room_key
from hold_service.service_layer.room_steps import advance_room

pytestmark = pytest.mark.integration


async def test_never_more_than_n_admitted_with_10n_polling_two_processes(start, db, h, rooms) -> None:
    n, seats = 4, 24
    settings = {"waiting_room_step_seconds": 0.1, "hold_rate_limit_per_minute": 1000}
    async with start(**settings) as one, start(**settings) as two:
        apps = [one, two]
        sid = await one.showtime({"A": seats})
        await rooms.configure(one, sid, n)
        customers = [h.new_id() for _ in range(10 * n)]
        tickets = {c: (await rooms.join(random.choice(apps).client, sid, c)).json()["ticket"] for c in customers}
        inside: set[int] = set()  # told "admitted", not done choosing yet
        outcome: dict[int, str] = {}
        most = {"customers": 0, "slots": 0, "samples": 0}

        async def take_a_seat(app, c: int, token: str) -> dict | None:
            start_at = random.randrange(seats)
            for i in range(seats):
                r = await app.hold(sid, [f"A{(start_at + i) % seats + 1}"], c, **{"X-Admission-Token": token})
                assert r.status_code in (201, 409), r.text
                if r.status_code == 201:
                    return r.json()
            return None

        async def customer(c: int) -> None:
            while True:
                app = random.choice(apps)
                r = (await rooms.poll(app.client, tickets[c], c)).json()
                if r["admitted"]:
                    inside.add(c)
                    hold = await take_a_seat(app, c, r["admissionToken"])
                    inside.discard(c)  # done choosing, off to pay
                    if hold is not None:
                        await rooms.pay(random.choice(apps), hold, c)
                    outcome[c] = "seat" if hold else "admitted, no seat"
                    return
                if r["soldOut"]:
                    outcome[c] = "sold out"
                    return
                await asyncio.sleep(random.uniform(0.05, 0.1))

        async def sample() -> None:
            while len(outcome) < len(customers):
                now_s, now_us = await one.redis.time()
                slots = await one.redis.zcount(room_key(sid, "active"), f"({now_s * 1000 + now_us // 1000}", "+inf")
                most["customers"] = max(most["customers"], len(inside))
                most["slots"] = max(most["slots"], slots)
                most["samples"] += 1
                await asyncio.sleep(0.01)

        await asyncio.wait_for(asyncio.gather(sample(), *(customer(c) for c in customers)), 90)
        print(f"\n{len(customers)} customers, limit {n}: {most['samples']} samples, at most {most['customers']} "
              f"admitted customers and {most['slots']} live slots at once; outcomes "
              f"{ {o: list(outcome.values()).count(o) for o in set(outcome.values())} }")
        assert most["customers"] <= n and most["slots"] <= n and most["samples"] > 20
        assert sorted(outcome.values()) == ["seat"] * seats + ["sold out"] * (10 * n - seats)
    assert await db.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status = 'BOOKED'",
                             sid) == seats
    await h.assert_single_holders(db, sid)


def spearman(xs: list[int], ys: list[int]) -> float:
    rank_x = {x: i for i, x in enumerate(sorted(xs))}
    rank_y = {y: i for i, y in enumerate(sorted(ys))}
    return statistics.correlation([rank_x[x] for x in xs], [rank_y[y] for y in ys])


async def test_the_opening_shuffles_early_joiners_once_then_first_come_first_served(start, db, h, rooms) -> None:
    """200 customers join before the opening, one after the other. At the opening both processes step at
    once: the shuffle happens once (both see the same order, the seed's, moved in chunks of 37) and the order is
    unrelated to arrival: the rank correlation with the joining order is within +-0.3 (for a random order its
    standard deviation is 1/sqrt(199) = 0.07: 4 of them; arrival order would be 1). Then 20 later joiners queue
    in arrival order."""
    early_count = 200
    async with start(waiting_room_step_seconds=60) as one, start(waiting_room_step_seconds=60) as two:
        one.deps.queue.max_scan = two.deps.queue.max_scan = 37
        sid = await one.showtime({"A": 50})
        await rooms.configure(one, sid, 1, opens_at="2030-01-01T00:00:00Z")
        early = [h.new_id() for _ in range(early_count)]
        tickets = {}
        for i, c in enumerate(early):
            joined = (await rooms.join((one, two)[i % 2].client, sid, c)).json()
            assert joined["position"] is None  # before the opening there is no order to tell
            tickets[c] = joined["ticket"]
        opening = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
        await rooms.configure(one, sid, 1, opens_at=opening)
        await rooms.configure(two, sid, 1, opens_at=opening)
        await asyncio.gather(advance_room(sid, one.deps), advance_room(sid, two.deps))  # both at once

        async def position(app, c: int) -> int:
            r = (await rooms.poll(app.client, tickets[c], c)).json()
            return 0 if r["admitted"] else r["position"]  # the first in line was admitted at the opening

        seen_one = [await position(one, c) for c in early]
        seen_two = [await position(two, c) for c in early]
        assert seen_one == seen_two and sorted(seen_one) == list(range(early_count))  # one order, everyone once
        rho = spearman(list(range(early_count)), seen_one)
        print(f"\nrank correlation of the opening's order with the arrival order: {rho:+.3f}")
        assert -0.3 < rho < 0.3
        late = [h.new_id() for _ in range(20)]
        positions = [(await rooms.join((one, two)[i % 2].client, sid, c)).json()["position"]
                     for i, c in enumerate(late)]
        assert positions == list(range(early_count, early_count + 20))  # after everyone early, in arrival order
        seed = await db.fetchval("SELECT shuffle_seed FROM waiting_room WHERE showtime_id = $1", sid)
        assert seed and await one.redis.hget(room_key(sid, "state"), "seed") == seed  # fixed once, in Postgres
    by_seed = sorted(early, key=lambda c: int(hashlib.sha1(f"{seed}:{c}".encode()).hexdigest()[:13], 16))
    assert [seen_one[early.index(c)] for c in by_seed] == list(range(early_count))  # nobody in before the last chunk


async def test_late_joiners_are_admitted_first_come_first_served(start, h, rooms) -> None:
    async with start(waiting_room_step_seconds=0.05) as svc:
        sid = await svc.showtime({"A": 20})
        await rooms.configure(svc, sid, 1)
        customers = [h.new_id() for _ in range(8)]
        tickets = {c: (await rooms.join(svc.client, sid, c)).json()["ticket"] for c in customers}
        order: list[int] = []

        async def wait_then_leave(c: int) -> None:
            token = await rooms.admitted(svc.client, tickets[c], c, timeout=30)
            order.append(c)
            hold = (await svc.hold(sid, [f"A{len(order)}"], c, **{"X-Admission-Token": token})).json()
            await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(c))  # leaves: the next one

        started = time.monotonic()
        await asyncio.gather(*(wait_then_leave(c) for c in reversed(customers)))  # polling order is irrelevant
        assert order == customers, (order, customers)
        assert time.monotonic() - started < 30
