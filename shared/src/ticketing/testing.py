"""Test helpers: real services only, fail (never skip) under CI=true, processes started for e2e tests."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

# Re-exported: tests and benchmarks import them from here.
from ticketing.migrations import apply_migrations as apply_migrations
from ticketing.migrations import shared_migrations as shared_migrations

REPO_ROOT = Path(__file__).resolve().parents[3]
# Several checkouts of the repository on one machine can keep their test data apart.
TEST_DATABASE = os.environ.get("TICKETING_TEST_DATABASE", "ticketing_test")
# hold-service's rate limits lifted, for a hold-service process a test or benchmark starts. Every test client
# comes from 127.0.0.1 and the counters live in the shared Redis: with the defaults (120 holds a minute per
# address) the suites that run first spend the budget of those that come after (CI got 429 on a test's one
# hold); so do seat-map streams (8 per address), and voucher quotes per customer (schema fuzzing asks for
# hundreds). The tests of the limits start their service with limits of their own.
UNLIMITED_HOLDS = {"HOLD_RATE_LIMIT_PER_MINUTE": "1000000000", "HOLD_RATE_LIMIT_PER_IP_PER_MINUTE": "1000000000",
                   "SEAT_MAP_MAX_STREAMS_PER_ADDRESS": "1000000", "VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE": "1000000000"}


def require(service: str, reachable: bool, detail: str = "") -> None:
    """A missing service fails the test under CI=true and skips it on a laptop without infra."""
    if reachable:
        return
    message = f"{service} is not reachable ({detail}); run `make infra`"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def test_dsn(dsn: str) -> str:
    """The same role's DSN pointed at the test database."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{TEST_DATABASE}"))


def import_path(path: Path, name: str) -> ModuleType:
    """A helper module of a tests folder, by its path: under --import-mode=importlib a test cannot
    `import fakes`, so a conftest loads it with this and hands it out as a fixture."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before it runs: its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A loopback port nobody listens on, for a process to bind a moment later.

    Drawn below the kernel's ephemeral range: a port from that range (`bind(0)`) can be handed, before the
    process binds it, to one of the many outgoing connections of the suites running meanwhile (the compose
    test's port, bound a minute later, was: "address already in use")."""
    low = _ephemeral_low()
    while True:
        port = _ports.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


_ports = random.Random()  # its own: a test that seeds the global generator must not make two runs pick alike


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


@contextmanager
def service_process(args: list[str], env: Mapping[str, str], *, ready_url: str | None = None,
                    timeout: float = 60.0, log_path: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Start `python <args>` with `env` added; wait for `ready_url` to answer 200; kill it afterwards."""
    log = open(log_path or os.devnull, "ab")
    proc = subprocess.Popen([sys.executable, *args], env={**os.environ, **env}, stdout=log, stderr=log,
                            cwd=REPO_ROOT)
    try:
        if ready_url:
            wait_http_ok(ready_url, timeout, proc)
        yield proc
    finally:
        stop_process(proc)
        log.close()


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_http_ok(url: str, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} was ready")
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return
            last = f"{response.status_code} {response.text[:200]}"
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready after {timeout}s: {last}")


async def eventually(check, timeout: float = 20.0, interval: float = 0.1):  # type: ignore[no-untyped-def]
    """Poll an async `check` until it returns a truthy value; return it or fail with the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {value!r})")


async def start_at_end(bootstrap: str, groups: Mapping[str, list[str]]) -> None:
    """topic -> consumer groups that do not exist yet: commit the topic's current end offsets for each, so
    their consumers begin there. A fresh group would otherwise read the shared topic from its earliest
    offset, every earlier test's events: minutes of reading on a busy machine."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        # Not consumer.partitions_for_topic: a consumer subscribed to nothing has no metadata and gives None.
        described = await admin.describe_topics(list(groups))
    finally:
        await admin.close()
    for topic in described:
        parts = [TopicPartition(topic["topic"], p["partition"]) for p in topic["partitions"]]
        if not parts:
            raise RuntimeError(f"topic {topic['topic']} has no partitions")
        for group in groups[topic["topic"]]:
            committer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
            await committer.start()
            try:
                committer.assign(parts)  # manual assignment: commits without joining the group
                await committer.commit(dict(await committer.end_offsets(parts)))
            finally:
                await committer.stop()
