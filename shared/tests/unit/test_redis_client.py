"""ticketing.redis_client: one node or a Redis Cluster from the same settings."""

from __future__ import annotations

import asyncio
import socket

import pytest
import redis.asyncio as aioredis
import uvloop
from pydantic import ValidationError
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException
from ticketing.redis_client import REDIS_UNAVAILABLE, cluster_nodes, is_cluster, raised_by_a_closed_stream, redis_client
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


def _write_to_a_closed_transport() -> BaseException:
    """What writing to a connection the client has just closed raises, under uvloop (the services' loop)."""
    async def scenario() -> BaseException:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        writer.transport.abort()
        await asyncio.sleep(0.01)
        try:
            writer.writelines([b"PING\r\n"])
        except Exception as exc:
            return exc
        finally:
            server.close()
        raise AssertionError("the write on a closed transport did not fail")
    return uvloop.run(scenario())


async def test_a_call_cut_by_the_client_closing_its_connections_is_a_connection_error(monkeypatch) -> None:
    closed = await asyncio.to_thread(_write_to_a_closed_transport)  # a loop of its own
    assert raised_by_a_closed_stream(closed)

    async def cut(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise closed

    monkeypatch.setattr(RedisCluster, "execute_command", cut)
    client = redis_client(ServiceSettings(redis_cluster_nodes="127.0.0.1:1"), 0.5)
    with pytest.raises(RedisConnectionError, match="closed under the call"):
        await client.get("x")

    async def bug(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None.missing  # a bug of ours stays a bug

    monkeypatch.setattr(RedisCluster, "execute_command", bug)
    with pytest.raises(AttributeError):
        await client.get("x")


async def test_a_cluster_with_no_node_answering_fails_a_call_as_an_outage() -> None:
    # redis-py raises RedisClusterException (no RedisError) when no startup node answers its slot-map refresh: a
    # Redis master killed under load once made hold-service answer 500 instead of failing open (R16).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    cluster = redis_client(ServiceSettings(redis_cluster_nodes=f"127.0.0.1:{port}"), 0.5)
    try:
        with pytest.raises(REDIS_UNAVAILABLE) as caught:
            await cluster.get("k")
        assert isinstance(caught.value, RedisConnectionError), repr(caught.value)
        assert isinstance(caught.value.__cause__, RedisClusterException)
    finally:
        await cluster.aclose()
