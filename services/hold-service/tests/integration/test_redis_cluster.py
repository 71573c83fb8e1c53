"""hold-service on a real Redis Cluster (three masters, a replica each, started by deploy/local/cluster.sh):
every script's keys share one slot (a CROSSSLOT fails these tests), the app works through the cluster client
(gate, limits, releases, waiting room, readiness), and a master's failover is ridden out: the gate fails
open and Postgres decides, the waiting room answers 503 or goes on, then pauses until the tokens it may have
lost have lapsed, and resumes."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import datetime
from pathlib import Path

import pytest
from hold_service.adapters import stream_leases
from hold_service.adapters.redis_script import LuaScript
from hold_service.adapters.room_queue import crowd_keys, room_key, room_keys
from hold_service.adapters.seat_gate import gate_tail, mark_key, seat_key
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from ticketing_testing import eventually

pytestmark = pytest.mark.integration


async def test_every_script_runs_on_redis_cluster(redis_cluster) -> None:  # type: ignore[no-untyped-def]
    client = RedisCluster(host="127.0.0.1", port=redis_cluster.ports[0], decode_responses=True)
    lua = Path(stream_leases.__file__).parent / "lua"
    script = {path.stem: LuaScript(client, path.name) for path in sorted(lua.glob("*.lua"))}
    ran: set[str] = set()
    sid, customer = random.randint(10**9, 2**40), 7
    keys = room_keys(sid)
    assert len({client.keyslot(k) for k in keys}) == 1  # one slot for the whole room
    ticket, position, _ = await script["room_join"](keys, [customer, "00ff00ff00ff00ff", 0])
    assert position == 1
    joined = ticket.split(":")[1]
    step_args = [5, 0, 0, "seed", 10, 0, "", 180_000, 30_000, 5_000, 60_000, 0, 1]  # no lease yet: asks for one
    assert await script["room_step"](keys, step_args) == ["need_lease"]
    step_args[2] = int(time.time() * 1000) + 600_000
    assert (await script["room_step"](keys, step_args))[:2] == ["ok", 1]  # admitted
    what, slot, *_ = await script["room_poll"](keys, [customer, ticket, joined, 0, 250])
    assert what == "admitted"
    assert await script["try_hold"](gate_tail(sid), [60_000, 0, "hold-0", customer, slot]) == [[], 0]  # gate off
    gate_keys = [seat_key(sid, "A1"), seat_key(sid, "A2"), *gate_tail(sid)]
    assert await script["try_hold"](gate_keys, [60_000, 2, "hold-1", customer, slot]) == [[], 0]  # no mark yet
    assert await script["fill"]([mark_key(sid), seat_key(sid, "A3")], [60_000, "hold-0", 0]) == 1
    assert await script["keep"]([seat_key(sid, "A1"), seat_key(sid, "A2")], ["hold-1", 90_000]) == 2
    assert await script["note"]([seat_key(sid, "A4"), seat_key(sid, "A5")], ["hold-3", 90_000]) == 2
    assert await script["release"](gate_keys[:2], ["hold-1"]) is not None
    assert await script["room_leave"](keys, [customer]) == 1
    assert await script["try_hold"](gate_keys[:1] + gate_keys[2:], [60_000, 1, "hold-2", customer, slot]) == [-1, 1]
    assert await script["rate_limit"]([f"ratelimit:holds:{customer}"], [5, 60_000]) == 0
    assert await script["address_rate_limit"](["ratelimit:address:{192.0.2.1}"], [120, 60_000]) == 0
    lease_key = stream_leases._key("192.0.2.1")
    assert await script["stream_lease"]([lease_key], [8, 60_000, "stream-1"]) == 1
    assert await script["stream_renew"]([lease_key], [60_000, "stream-1"]) == 1
    crowd = crowd_keys(sid)
    assert {client.keyslot(k) for k in crowd} == {client.keyslot(keys[0])}  # the crowd's keys beside the room's
    assert await script["room_arrive"](crowd, [180_000, customer, 8]) == [2, 2]
    claims = [*keys, room_key(sid, "claims")]  # a visitor's place claimed: the claims beside the room's keys
    assert {client.keyslot(k) for k in claims} == {client.keyslot(keys[0])}
    assert await script["room_claim"](claims, [-5, customer, 60_000]) == ["none", 0]  # no such visitor admitted
    ran.update(("room_join", "room_step", "room_poll", "try_hold", "fill", "keep", "note", "release",
                "room_leave", "rate_limit", "address_rate_limit", "stream_lease", "stream_renew", "room_arrive",
                "room_claim"))
    assert ran == set(script), f"scripts not run on the cluster: {set(script) - ran}"  # a new script joins here
    with pytest.raises(RedisClusterException, match="same key slot"):  # what a script over two slots meets
        await script["room_leave"]([*keys[:3], room_key(sid + 1, "active"), *keys[4:]], [customer])
    await client.aclose()


async def test_holds_on_a_cluster_gate_limits_releases_and_readiness(start, db, h, redis_cluster) -> None:
    async with start(redis_cluster_nodes=redis_cluster.nodes, hold_rate_limit_per_minute=1000) as svc:
        ready = await svc.client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["redis"] == "ok"
        sid = await svc.showtime({"A": 12})
        rng, codes = random.Random(), [f"A{i}" for i in range(1, 13)]
        storm = await asyncio.gather(*(svc.hold(sid, rng.sample(codes, rng.randint(1, 3))) for _ in range(120)))
        assert {r.status_code for r in storm} <= {201, 409}
        assert any(r.status_code == 409 and r.json()["decidedBy"] == "gate" for r in storm)
        await h.assert_single_holders(db, sid)
        # A cancelled hold's gate keys are freed: the next customer's request reaches Postgres and wins.
        won = next(r.json() for r in storm if r.status_code == 201)
        customer = (await db.fetchval("SELECT customer_id FROM booking WHERE hold_id = $1::uuid", won["holdId"]))
        assert (await svc.client.delete(f"/holds/{won['holdId']}", headers=h.auth(customer))).status_code == 204
        assert (await svc.hold(sid, won["seats"])).status_code == 201
    async with start(redis_cluster_nodes=redis_cluster.nodes, hold_rate_limit_per_minute=2) as svc:
        sid, customer = await svc.showtime({"B": 6}), h.new_id()
        answers = [(await svc.hold(sid, [f"B{i}"], customer)).status_code for i in range(1, 4)]
        assert answers == [201, 201, 429]  # per customer, on the cluster
    async with start(redis_cluster_nodes=redis_cluster.nodes, hold_rate_limit_per_ip_per_minute=2) as svc:
        sid = await svc.showtime({"C": 6})
        async with svc.client_from(f"100.64.{random.randint(0, 255)}.{random.randint(1, 254)}") as client:
            got = [(await client.post(f"/showtimes/{sid}/holds", json={"seats": [f"C{i}"]},
                                      headers=h.auth(h.new_id()))).status_code for i in range(1, 4)]
        assert got == [201, 201, 429]  # per address, whoever asks


async def test_a_master_failover_mid_storm_the_gate_fails_open_and_comes_back(start, db, h, redis_cluster) -> None:
    async with start(redis_cluster_nodes=redis_cluster.nodes, hold_rate_limit_per_minute=1000,
                     redis_retry_after_seconds=0.2) as svc:
        sid = await svc.showtime({"A": 12, "B": 2})
        dead = redis_cluster.master_of(seat_key(sid, "A1"))
        rng, codes, answers = random.Random(), [f"A{i}" for i in range(1, 13)], []
        for wave in range(4):
            batch = [svc.hold(sid, rng.sample(codes, rng.randint(1, 3))) for _ in range(60)]
            if wave == 1:
                batch.append(asyncio.to_thread(redis_cluster.kill, dead))
            answers += [r for r in await asyncio.gather(*batch) if r is not None]
            await asyncio.sleep(0.5)
        assert {r.status_code for r in answers} <= {201, 409}  # never a 5xx: Postgres decided meanwhile
        await h.assert_single_holders(db, sid)
        promoted = await asyncio.to_thread(redis_cluster.wait_failover, seat_key(sid, "A1"), dead)
        assert promoted != dead

        async def gate_answers_again() -> bool:
            first = await svc.hold(sid, ["B1"])
            again = await svc.hold(sid, ["B1"])
            return first.status_code in (201, 409) and again.status_code == 409 and \
                again.json()["decidedBy"] == "gate"
        await eventually(gate_answers_again, timeout=20, interval=0.3)
        assert (await svc.client.get("/readyz")).status_code == 200
    await asyncio.to_thread(redis_cluster.restart, dead)  # back as a replica of the promoted one
    await asyncio.to_thread(redis_cluster.settle)


async def test_a_master_failover_the_room_pauses_then_resumes_within_its_limit(start, db, h, rooms,
                                                                              redis_cluster) -> None:
    limit = 1
    async with start(redis_cluster_nodes=redis_cluster.nodes, waiting_room_step_seconds=0.05,
                     admission_token_ttl_seconds=3, redis_retry_after_seconds=0.1) as svc:
        sid = await svc.showtime({"A": 10})
        await rooms.configure(svc, sid, limit)
        a, b, c = h.new_id(), h.new_id(), h.new_id()
        tickets = {x: (await rooms.join(svc.client, sid, x)).json()["ticket"] for x in (a, b, c)}
        token = await rooms.admitted(svc.client, tickets[a], a)
        slots = [(time.time(), time.time() + 3)]
        dead = redis_cluster.master_of(room_key(sid, "state"))
        await asyncio.to_thread(redis_cluster.kill, dead)
        seen: set[int] = set()
        admitted_at: dict[int, float] = {}
        deadline = time.monotonic() + 30
        while len(admitted_at) < 2 and time.monotonic() < deadline:  # b, then c, each after the other's slot
            for x in [x for x in (b, c) if x not in admitted_at]:
                r = await rooms.poll(svc.client, tickets[x], x)
                seen.add(r.status_code)
                if r.status_code == 200 and r.json()["admitted"]:
                    admitted_at[x] = time.time()
                    end = datetime.fromisoformat(r.json()["expiresAt"]).timestamp()
                    slots.append((time.time(), end))
            await asyncio.sleep(0.05)
        assert seen <= {200, 503}  # while the master's slots are not served: 503 UNAVAILABLE, never a 5xx
        assert sorted(admitted_at, key=admitted_at.get) == [b, c], (admitted_at, seen)  # places kept
        assert h.most_at_once(slots) <= limit  # a's token (maybe lost with the master) lapsed before b came in
        assert (await svc.hold(sid, ["A9"], a, **{"X-Admission-Token": token})).status_code == 403  # lapsed
    await h.assert_single_holders(db, sid)
    await asyncio.to_thread(redis_cluster.restart, dead)
    await asyncio.to_thread(redis_cluster.settle)
