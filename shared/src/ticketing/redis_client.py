"""The one way a process reaches Redis: one node (`REDIS_URL`) or a Redis Cluster (`REDIS_CLUSTER_NODES`).

With `REDIS_CLUSTER_NODES=host:port,...` set, every Redis use of the process goes through redis-py's cluster
client, which finds the slot map from any of the nodes named and follows it (MOVED, a replica promoted after
its master died). Credentials and TLS then come from `REDIS_URL` (its user, password and `rediss://`); its
host, port and database number are not used (a cluster has one database).

What keeps the services' Redis code the same on both: every Lua script's keys share one hash tag
(`seat:{42}:F5`, `wr:{42}:state`, `voucher:{FLASH100}:remaining`), so each script runs on the one node that
owns its slot; a decision that needs keys of two tags is two calls. A cluster refuses a pipeline of
EVALSHAs, so several scripts sent together are separate calls there (`redis_script.run_together`).
"""

from __future__ import annotations

from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ClusterDownError, ReadOnlyError, RedisClusterException, SlotNotCoveredError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

RedisClient = aioredis.Redis | RedisCluster
MAX_CONNECTIONS = 200  # per process (per node of a cluster)
# What a Redis node or cluster raises while it is down, restarting or failing over (a master gone, its slots
# not served yet, a demoted node refusing writes): callers answer 503 or fail open, and try again later.
REDIS_UNAVAILABLE: tuple[type[BaseException], ...] = (
    RedisConnectionError, RedisTimeoutError, ClusterDownError, TryAgainError, ReadOnlyError, SlotNotCoveredError,
    OSError)


class RedisTarget(Protocol):
    """Where Redis is: every service's settings (`ServiceSettings`) have both."""

    redis_url: str
    redis_cluster_nodes: str


def cluster_nodes(spec: str) -> list[tuple[str, int]]:
    """`host:port,host:port` -> [(host, port), ...]; a malformed entry is a ValueError naming it."""
    nodes = []
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"REDIS_CLUSTER_NODES: {entry!r} is not host:port")
        nodes.append((host.strip("[]"), int(port)))
    return nodes


def redis_client(target: RedisTarget, timeout: float, *, retry_dropped: bool = False) -> RedisClient:
    """A client with `timeout` for connecting and for each answer (a dead Redis must cost a quick error, not a
    hung request). `retry_dropped`: one quick retry of a command whose pooled connection turned out dead (a
    restarted node leaves stale sockets); only for callers whose scripts are idempotent."""
    options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout,
                               "decode_responses": True, "max_connections": MAX_CONNECTIONS}
    nodes = cluster_nodes(target.redis_cluster_nodes)
    if not nodes:
        if retry_dropped:
            options.update(retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 2),
                           retry_on_error=[RedisConnectionError])
        return aioredis.from_url(target.redis_url, **options)
    url = aioredis.connection.parse_url(target.redis_url)
    options.update({k: url[k] for k in ("username", "password") if url.get(k)})
    if url.get("connection_class") is aioredis.SSLConnection:
        options["ssl"] = True
    # The cluster client retries a command on a dropped connection, a moved slot or a cluster that is down for
    # a moment, refreshing its slot map in between: a master's failover costs its slots' callers the seconds
    # until the replica is promoted, whatever `retry_dropped` says. Slots not served meanwhile are an error
    # of those slots' calls only (require_full_coverage), and a MOVED answer patches the map rather than
    # closing every connection of the client (reinitialize_steps 0; a dropped connection still refreshes it).
    return _RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in nodes],
                         retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 2), require_full_coverage=False,
                         reinitialize_steps=0, **options)


class _RedisCluster(RedisCluster):
    """redis-py's cluster client, but a call caught in the client closing its connections fails as the
    ConnectionError it is. The client closes all of them at once, those other calls are using included, when
    a node answers CLUSTERDOWN or a slot is not served (a failover under way); redis-py 8.1 then lets those
    calls fail with whatever the closed stream raises (AttributeError, TypeError; RuntimeError under uvloop;
    redis/redis-py issue 4287), which no caller would take for a Redis outage. Likewise a call that finds no
    node answering while the client refreshes its slot map ("Redis Cluster cannot be connected", a
    RedisClusterException, which is no RedisError) fails as the ConnectionError it is."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().execute_command(*args, **kwargs)
        except (AttributeError, TypeError, RuntimeError) as exc:
            if not raised_by_a_closed_stream(exc):
                raise
            raise RedisConnectionError(f"the connection was closed under the call: {exc}") from exc
        except RedisClusterException as exc:
            if isinstance(exc, SlotNotCoveredError) or not isinstance(exc.__cause__, REDIS_UNAVAILABLE):
                raise
            raise RedisConnectionError(f"no node of the cluster answered: {exc}") from exc


def raised_by_a_closed_stream(exc: BaseException) -> bool:
    """Whether `exc` came from writing to a connection already closed: raised in redis-py's connection or in
    the event loop's transport code, not in the caller's."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = "" if tb is None else tb.tb_frame.f_code.co_filename
    return where.endswith("redis/asyncio/connection.py") or "asyncio/" in where or where.startswith("uvloop/")


async def redis_ready(client: RedisClient) -> None:
    """`/readyz`'s Redis check: one node answers PING; on a cluster, every shard's primary does."""
    if isinstance(client, RedisCluster):
        await client.ping(target_nodes=RedisCluster.PRIMARIES)  # type: ignore[call-arg]
    else:
        await client.ping()


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)
