"""Session fixtures for tests against the real PostgreSQL, Redis and Kafka (`make infra`), and the set-up of
`pytest -n` (pytest-xdist): a copy of the test database for each worker, `serial` tests refused in workers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from ticketing.kafka import create_topics, kafka_reachable

from ticketing_testing import (
    BASE_TEST_DATABASE,
    ENV,
    apply_migrations,
    env,
    free_port,
    require,
    shared_migrations,
    test_dsn,
)
from ticketing_testing.workers import WORKER, copy_databases, worker_database

_containers: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    """The tests run in dev mode, as `make up` does (only dev takes the code's default secrets; a test of the
    other modes says so). `TICKETING_TEST_INFRA=containers`: the session's infrastructure from testcontainers
    (containers.py), in one process only."""
    os.environ.setdefault("APP_ENV", "dev")
    if os.environ.get("TICKETING_TEST_INFRA") != "containers" or hasattr(config, "workerinput"):
        return
    if config.getoption("numprocesses", None):
        raise pytest.UsageError("TICKETING_TEST_INFRA=containers runs in one process: drop -n")
    from ticketing_testing.containers import start

    overrides, stop = start(ENV, free_port)
    os.environ.update(overrides)
    _containers.update(overrides)
    config.add_cleanup(stop)


def pytest_report_header(config: pytest.Config) -> str | None:
    if not _containers:
        return None
    return ("infrastructure: testcontainers, kafka " + _containers["KAFKA_BOOTSTRAP_SERVERS"]
            + ", redis " + _containers["REDIS_URL"].split("//")[1].split("/")[0]
            + ", postgres " + _containers["HOLD_DATABASE_URL"].rsplit("@", 1)[1].split("/")[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list[Any]) -> None:
    """Before the workers start: each its own fresh copy of the test database (ticketing_testing.workers)."""
    copy_databases(BASE_TEST_DATABASE, [worker_database(BASE_TEST_DATABASE, spec.id) for spec in specs])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """`serial` tests restart the infrastructure the other workers run on, or read what the whole run
    published: a worker of `pytest -n` fails them unrun rather than run them beside other tests."""
    if WORKER and item.get_closest_marker("serial"):
        pytest.fail("a serial test never runs beside others: run it alone, after the rest "
                    "(-n 2 -m 'not serial', then -m serial without -n; make test-suite does)", pytrace=False)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    bootstrap = env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    require("Kafka", asyncio.run(kafka_reachable(bootstrap, timeout=5)), bootstrap)
    asyncio.run(create_topics(bootstrap))
    return bootstrap


@pytest_asyncio.fixture(scope="session")
async def redis_url() -> str:
    url = env("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = aioredis.from_url(url)
    try:
        ok = bool(await client.ping())
    except Exception:
        ok = False
    finally:
        await client.aclose()
    require("Redis", ok, url)
    return url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Redis Cluster of this session (three masters, a replica each), started by deploy/local/cluster.sh;
    a LocalRedisCluster (ticketing_testing.redis_cluster): `.nodes` is its REDIS_CLUSTER_NODES."""
    import shutil

    from ticketing_testing.redis_cluster import LocalRedisCluster

    require("redis-server", shutil.which("redis-server") is not None, "Debian's redis-server is not installed")
    cluster = LocalRedisCluster.start(tmp_path_factory.mktemp("redis-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


_migrated: set[tuple[str, str]] = set()


@pytest.fixture(scope="session")
def migrated_dsn() -> Callable[[str, Path | None], str]:
    """`migrated_dsn("HOLD_DATABASE_URL", migrations_dir)` -> the role's DSN on the migrated test DB."""
    def make(variable: str, migrations: Path | None = None) -> str:
        dsn = env(variable)
        require("PostgreSQL", bool(dsn), f"{variable} is not set (.env)")
        dsn = test_dsn(dsn)
        if (dsn, str(migrations)) not in _migrated:
            try:
                apply_migrations(dsn, shared_migrations(), *([migrations] if migrations else []))
            except Exception as exc:  # unreachable server, missing role: infra not provisioned
                require("PostgreSQL", False, repr(exc))
            _migrated.add((dsn, str(migrations)))
        return dsn
    return make


@pytest_asyncio.fixture
async def pg_connect() -> AsyncIterator[Callable[[str], object]]:
    opened: list[asyncpg.Connection] = []

    async def connect(dsn: str) -> asyncpg.Connection:
        conn = await asyncpg.connect(dsn)
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        await conn.close()


@pytest.fixture
def traced() -> Iterator[tuple[Any, Any]]:
    """Tracing on in this process for one test, its spans in memory: (InMemorySpanExporter, TracerProvider).
    Configured before any app is built, so the apps' own `tracing.configure` keeps it; off again afterwards,
    the libraries' instrumentation (asyncpg, redis, httpx) taken off with it."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from ticketing import tracing
    from ticketing.settings import ServiceSettings

    tracing.reset()
    exporter = InMemorySpanExporter()
    provider = tracing.configure(ServiceSettings(tracing_enabled=True, service_name="traced-test"), exporter)
    assert provider is not None
    try:
        yield exporter, provider
    finally:
        provider.shutdown()
        tracing.reset()
