"""ticketing.redis_client: one node or a Redis Cluster from the same settings."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.asyncio.cluster import RedisCluster
from ticketing.redis_client import cluster_nodes, is_cluster, redis_client
from ticketing.settings import ServiceSettings


def test_cluster_nodes_are_host_port_pairs() -> None:
    assert cluster_nodes("127.0.0.1:7101, 10.0.0.2:7102,") == [("127.0.0.1", 7101), ("10.0.0.2", 7102)]
    assert cluster_nodes("[::1]:7101") == [("::1", 7101)]
    assert cluster_nodes("") == []
    for bad in ("127.0.0.1", "127.0.0.1:x", ":7101"):
        with pytest.raises(ValueError, match="host:port"):
            cluster_nodes(bad)


def test_a_malformed_node_list_fails_at_start_up() -> None:
    with pytest.raises(ValidationError, match="REDIS_CLUSTER_NODES"):
        ServiceSettings(redis_cluster_nodes="redis-0,redis-1")


async def test_one_node_from_redis_url_a_cluster_from_the_nodes_with_the_urls_credentials() -> None:
    single = redis_client(ServiceSettings(redis_url="redis://127.0.0.1:6390/3"), 0.5)
    assert isinstance(single, aioredis.Redis) and not is_cluster(single)
    assert single.connection_pool.connection_kwargs["db"] == 3
    cluster = redis_client(ServiceSettings(redis_url="rediss://app:s3cret@ignored:1/0",
                                           redis_cluster_nodes="10.0.0.1:7101,10.0.0.2:7102"), 0.5)
    assert isinstance(cluster, RedisCluster) and is_cluster(cluster)
    kwargs = cluster.nodes_manager.connection_kwargs
    assert (kwargs["username"], kwargs["password"], kwargs["socket_timeout"]) == ("app", "s3cret", 0.5)
    assert kwargs["connection_class"].__name__ == "SSLConnection"  # rediss:// -> TLS to every node
    assert sorted(cluster.nodes_manager.startup_nodes) == ["10.0.0.1:7101", "10.0.0.2:7102"]
    await single.aclose()
    await cluster.aclose()
