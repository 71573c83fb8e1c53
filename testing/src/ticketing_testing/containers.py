"""The test infrastructure in containers, started with testcontainers (opt-in; the native path is the default).

`TICKETING_TEST_INFRA=containers` makes the pytest plugin start the project's own images (deploy/images:
`localhost/ticketing-{postgres,redis,kafka}:local`, or TICKETING_*_IMAGE) through any Docker-compatible API
(DOCKER_HOST; podman's socket here, with TESTCONTAINERS_RYUK_DISABLED=true since Ryuk's image cannot be
pulled) and point the tests at them: KAFKA_BOOTSTRAP_SERVERS, REDIS_URL and every *_DATABASE_URL of .env
are overridden for the session, with .env's roles and passwords (the postgres image provisions them).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import redis.asyncio as aioredis
from ticketing.kafka import kafka_reachable

if TYPE_CHECKING:  # imported at run time only by start(): testcontainers is a test dependency
    from testcontainers.core.container import DockerContainer

PASSWORDS = ("HOLD_DB_PASSWORD", "PAYMENT_DB_PASSWORD", "VOUCHER_DB_PASSWORD", "NOTIFIER_DB_PASSWORD",
             "PLATFORM_TEST_DB_PASSWORD")
DSNS = ("HOLD_DATABASE_URL", "PAYMENT_DATABASE_URL", "VOUCHER_DATABASE_URL", "NOTIFIER_DATABASE_URL",
        "PLATFORM_TEST_DATABASE_URL")
READY_TIMEOUT = 120.0


def _image(name: str) -> str:
    return os.environ.get(f"TICKETING_{name.upper()}_IMAGE", f"localhost/ticketing-{name}:local")


def _wait(what: str, ready: Callable[[], bool], container: DockerContainer) -> None:
    """Until `ready()`; a container that stopped, or the timeout, raises with the container's state and log."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready():
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status not in ("created", "running") or time.monotonic() > deadline:
            out, err = container.get_logs()
            log = (out + err).decode(errors="replace").splitlines()[-40:]
            waited = READY_TIMEOUT - (deadline - time.monotonic())
            raise TimeoutError(f"{what} in its container not ready ({wrapped.status}) after {waited:.0f}s; "
                               "its log ends:\n" + "\n".join(log))
        time.sleep(0.5)


def _answers(probe: Callable[[], object]) -> bool:
    try:
        return bool(asyncio.run(probe()))  # type: ignore[arg-type]
    except (OSError, asyncpg.PostgresError, TimeoutError, ConnectionError):
        return False


async def _pg_ok(dsn: str) -> bool:
    conn = await asyncpg.connect(dsn, timeout=3)
    await conn.close()
    return True


async def _redis_ok(url: str) -> bool:
    client = aioredis.from_url(url)
    try:
        return bool(await client.ping())
    finally:
        await client.aclose()


def _moved(dsn: str, host: str, port: int) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}@{host}:{port}"))


def start(dotenv: Mapping[str, str], free_port: Callable[[], int]) -> tuple[dict[str, str], Callable[[], None]]:
    """Start Postgres, Redis and Kafka; return the environment that points at them and a stop function."""
    from testcontainers.core.container import DockerContainer

    kafka_port = free_port()  # advertised as-is, so bound to the same host port
    postgres = DockerContainer(_image("postgres")).with_exposed_ports(5432)
    for key in PASSWORDS:
        postgres = postgres.with_env(key, dotenv[key])
    redis = DockerContainer(_image("redis")).with_exposed_ports(6379)
    kafka = (DockerContainer(_image("kafka")).with_bind_ports(9092, kafka_port)
             .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://127.0.0.1:{kafka_port}"))
    started = []
    try:
        for container in (postgres, redis, kafka):
            container.start()
            started.append(container)
        pg_port, redis_port = int(postgres.get_exposed_port(5432)), int(redis.get_exposed_port(6379))
        env = {name: _moved(dotenv[name], "127.0.0.1", pg_port) for name in DSNS if name in dotenv}
        env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        env["KAFKA_BOOTSTRAP_SERVERS"] = f"127.0.0.1:{kafka_port}"
        test_db = env["HOLD_DATABASE_URL"].rsplit("/", 1)[0] + "/ticketing_test"
        _wait("postgres", lambda: _answers(lambda: _pg_ok(test_db)), postgres)
        _wait("redis", lambda: _answers(lambda: _redis_ok(env["REDIS_URL"])), redis)
        _wait("kafka", lambda: asyncio.run(kafka_reachable(env["KAFKA_BOOTSTRAP_SERVERS"], timeout=3)), kafka)
    except BaseException:
        for container in started:
            container.stop()
        raise

    def stop() -> None:
        for container in started:
            container.stop()
    return env, stop
