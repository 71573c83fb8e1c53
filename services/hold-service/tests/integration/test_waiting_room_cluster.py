"""The waiting room's scripts on a real Redis Cluster (three redis-server processes this test starts and owns):
each script's keys share its showtime's (or address's) hash slot, so Redis Cluster runs every one of them
(a script over keys of two slots fails with CROSSSLOT)."""

from __future__ import annotations

import random
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hold_service.adapters.redis_script import LuaScript
from hold_service.adapters.room_queue import room_key, room_keys
from hold_service.adapters.seat_gate import gate_tail, mark_key, seat_key
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from ticketing.testing import stop_process

pytestmark = pytest.mark.integration


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free and valid too."""
    while True:
        port = random.randint(20000, 45000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[int]:
    ports = [cluster_port() for _ in range(3)]
    procs = [subprocess.Popen(["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--cluster-enabled", "yes",
                               "--cluster-config-file", str(tmp_path / f"nodes-{p}.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in ports]
    try:
        for p in ports:
            _wait(lambda p=p: redis.Redis(port=p).ping())
        subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                        "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True, timeout=60)
        _wait(lambda: redis.Redis(port=ports[0]).execute_command("CLUSTER INFO")["cluster_state"] == "ok")
        yield ports[0]
    finally:
        for proc in procs:
            stop_process(proc)


def _wait(check, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("redis cluster not ready")
        time.sleep(0.1)


async def test_every_room_script_runs_on_redis_cluster(cluster: int) -> None:
    client = RedisCluster(host="127.0.0.1", port=cluster, decode_responses=True)
    script = {name: LuaScript(client, f"{name}.lua")  # type: ignore[arg-type]
              for name in ("room_join", "room_poll", "room_step", "room_slot", "room_leave", "try_hold",
                           "rate_limit", "address_rate_limit", "fill", "keep")}
    sid, customer, keys = 4242, 7, room_keys(4242)
    assert len({RedisCluster.keyslot(client, k) for k in keys}) == 1  # one slot for the whole room
    ticket, position, _ = await script["room_join"](keys, [customer, "00ff00ff00ff00ff", 0])
    assert position == 1
    joined = ticket.split(":")[1]
    step_args = [5, 0, 0, "seed", 10, 0, "", 180_000, 30_000, 5_000, 60_000, 0]  # no lease yet: asks for one
    assert await script["room_step"](keys, step_args) == ["need_lease"]
    step_args[2] = int(time.time() * 1000) + 600_000
    assert (await script["room_step"](keys, step_args))[:2] == ["ok", 1]  # admitted
    what, slot, *_ = await script["room_poll"](keys, [customer, ticket, joined, 0, 250])
    assert what == "admitted"
    assert await script["room_slot"](keys, [customer, slot]) == 1
    gate_keys = [seat_key(sid, "A1"), seat_key(sid, "A2"), *gate_tail(sid)]
    assert await script["try_hold"](gate_keys, [60_000, 2, "hold-1", customer, slot]) == [[], 0]  # no mark yet
    assert await script["fill"]([mark_key(sid), seat_key(sid, "A3")], [60_000, "hold-0", 0]) == 1
    assert await script["keep"]([seat_key(sid, "A1"), seat_key(sid, "A2")], ["hold-1", 90_000]) == 2
    assert await script["room_leave"](keys, [customer]) == 1
    assert await script["try_hold"](gate_keys[:1] + gate_keys[2:], [60_000, 1, "hold-2", customer, slot]) == [-1, 1]
    assert await script["rate_limit"]([f"ratelimit:holds:{customer}"], [5, 60_000]) == 0
    assert await script["address_rate_limit"](["ratelimit:address:{192.0.2.1}"], [120, 60_000]) == 0
    with pytest.raises(RedisClusterException, match="same key slot"):  # what a script over two slots meets
        await script["room_leave"]([*keys[:3], room_key(sid + 1, "active"), *keys[4:]], [customer])
    await client.aclose()
