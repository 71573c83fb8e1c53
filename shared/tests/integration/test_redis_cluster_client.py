"""The cluster client of ticketing.redis_client against a real Redis Cluster (deploy/local/cluster.sh) while
one of its masters is killed: what a call can fail with is a Redis outage the callers know how to handle
(503 or fail open), never an error they would take for a bug (a bare 500); readiness says so meanwhile."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time

import pytest
import redis
from redis.asyncio.cluster import RedisCluster
from ticketing.redis_client import REDIS_UNAVAILABLE, redis_client, redis_ready
from ticketing.settings import ServiceSettings

pytestmark = pytest.mark.integration
SCRIPT = "return redis.call('INCR', KEYS[1])"


def full_coverage(cluster, required: bool) -> None:  # type: ignore[no-untyped-def]
    for port in cluster.alive():
        redis.Redis(port=port).config_set("cluster-require-full-coverage", "yes" if required else "no")


async def test_a_master_killed_under_concurrent_calls_fails_them_only_as_outages(redis_cluster) -> None:
    # Redis's default (the whole cluster stops while a shard has no master) is the harsh case: the cluster
    # answers CLUSTERDOWN, and redis-py closes every connection of the client under the calls in flight.
    full_coverage(redis_cluster, True)
    client = redis_client(ServiceSettings(redis_cluster_nodes=redis_cluster.nodes), 0.2)
    script = client.register_script(SCRIPT)
    await redis_ready(client)
    keys = [f"calls:{{{n}}}" for n in range(100)]  # spread over every shard
    dead = redis_cluster.master_of(keys[0])
    failures: collections.Counter[str] = collections.Counter()
    down_seen = False
    started, killed = time.monotonic(), False
    try:
        while time.monotonic() - started < 10:
            if not killed and time.monotonic() - started > 1:
                await asyncio.to_thread(redis_cluster.kill, dead)
                killed = True
                try:
                    await redis_ready(client)
                except REDIS_UNAVAILABLE:
                    down_seen = True  # readiness: a shard without its master is not ready
            answers = await asyncio.gather(*(script(keys=[k]) for k in keys), return_exceptions=True)
            for a in answers:
                if isinstance(a, BaseException):
                    assert isinstance(a, REDIS_UNAVAILABLE), f"{type(a).__name__}: {a}"
                    failures[type(a).__name__] += 1
            await asyncio.sleep(0.05)
        assert failures, "the failover went unnoticed: nothing was tested"
        assert down_seen
        await redis_ready(client)  # the replica took over: ready again
        assert all(isinstance(a, int) for a in await asyncio.gather(*(script(keys=[k]) for k in keys)))
        print(f"failures while the master was replaced: {dict(failures)}")
    finally:
        with contextlib.suppress(REDIS_UNAVAILABLE):  # closing may outlast the 0.2 s timeout on a loaded machine
            await client.aclose()
        await asyncio.to_thread(redis_cluster.restart, dead)
        await asyncio.to_thread(redis_cluster.settle)
        full_coverage(redis_cluster, False)


async def test_keys_of_two_hash_tags_in_one_script_are_refused(redis_cluster) -> None:
    """What keeps every script of the services honest on a cluster: the client or the node refuses it."""
    client = redis_client(ServiceSettings(redis_cluster_nodes=redis_cluster.nodes), 1.0)
    assert isinstance(client, RedisCluster)
    refused = (redis.exceptions.RedisClusterException, redis.exceptions.ClusterCrossSlotError)
    with pytest.raises(refused, match=r"same (key )?slot"):
        await client.eval(SCRIPT, 2, "a:{1}", "a:{2}")
    with pytest.raises(refused, match=r"same (key )?slot"):
        await client.register_script(SCRIPT)(keys=["a:{1}", "a:{2}"])
    assert await client.eval(SCRIPT, 2, "a:{1}:x", "a:{1}:y") >= 1  # one tag: one slot, one node
    await client.aclose()
