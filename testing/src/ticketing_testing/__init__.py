"""Test support for the whole workspace (never a dependency of a service): real services only, fail (never skip)
under CI=true, processes started for e2e tests, the settings of .env.

Beside these helpers: `pytest_plugin` (the session fixtures, loaded by the root conftest.py), `workers` (one
pytest-xdist worker's share of the infrastructure), `lifted_limits` (the services' rate limits lifted for the
processes tests start), `in_memory` (the schema under the fakes' units of work), `redis_cluster` (a local Redis
Cluster) and `containers` (the infrastructure from testcontainers, opt-in).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import importlib.util
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from dotenv import dotenv_values

# Re-exported: tests and benchmarks import them from here.
from ticketing.migrations import apply_migrations as apply_migrations
from ticketing.migrations import shared_migrations as shared_migrations

from ticketing_testing.workers import worker_database

REPO_ROOT = Path(__file__).resolve().parents[3]
ENV = {k: v for k, v in dotenv_values(REPO_ROOT / ".env").items() if v is not None}
# Several checkouts of the repository on one machine can keep their test data apart; under `pytest -n`, each
# worker has a copy of its own (ticketing_testing.workers).
BASE_TEST_DATABASE = os.environ.get("TICKETING_TEST_DATABASE", "ticketing_test")
TEST_DATABASE = worker_database(BASE_TEST_DATABASE)


def env(name: str, default: str = "") -> str:
    """A setting as the services' processes would read it: the environment, else .env, else `default`."""
    return os.environ.get(name) or ENV.get(name, default)


def merchant_auth() -> dict[str, str]:
    """The header the gateway simulator wants on its Stripe-shaped API: the STRIPE_API_KEY its processes read
    (the environment, else .env, else the dev default), the same one payment-service sends."""
    from ticketing.settings import DEV_DEFAULT_SECRET

    return {"Authorization": f"Bearer {env('STRIPE_API_KEY', DEV_DEFAULT_SECRET)}"}


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
    """A helper module or package of a tests folder, by its path, registered as `name`: under
    --import-mode=importlib a test cannot `import fakes`, so a conftest loads it with this and hands it out as
    a fixture (a test module may then also `from <name> import ...`). A folder is loaded as a package: its
    `__init__.py`, whose relative imports find the folder's modules."""
    if name in sys.modules:
        return sys.modules[name]
    if path.is_dir():
        spec = importlib.util.spec_from_file_location(name, path / "__init__.py",
                                                      submodule_search_locations=[str(path)])
    else:
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
    test's port, bound a minute later, was: "address already in use"). Each pytest-xdist worker draws from a
    slice of its own (the processes it starts too: they inherit its name), and a port handed out is not handed
    out again by this process for a while: two stacks starting at once on two workers had drawn the same port,
    free when each looked, and the second to bind it failed."""
    low = _ephemeral_low()
    now = time.monotonic()
    for port, until in list(_handed.items()):
        if until <= now:
            del _handed[port]
    for tries in itertools.count():
        port = _ports.randrange(max(1024, low - 12000), low)
        if port % PORT_SLICES != _port_slice() or (port in _handed and tries < 10_000):
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed[port] = now + HANDED_SECONDS
        return port
    raise AssertionError("unreachable")


PORT_SLICES = 8  # gw0..gw6 one each, and every process outside xdist (a plain pytest, the deployment tests) the last
HANDED_SECONDS = 120.0  # a port handed out is left to its process this long before it may be drawn again here
_ports = random.Random()  # its own: a test that seeds the global generator must not make two runs pick alike
_handed: dict[int, float] = {}


def _port_slice() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) % (PORT_SLICES - 1) if worker.startswith("gw") and worker[2:].isdigit() else PORT_SLICES - 1


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


def transactions_opened(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every asyncpg transaction this process starts from now on (the test's `monkeypatch` undoes it)."""
    from asyncpg.transaction import Transaction

    opened: list[object] = []
    real_start = Transaction.start

    async def counted(self: Transaction) -> None:
        opened.append(self)
        await real_start(self)

    monkeypatch.setattr(Transaction, "start", counted)
    return opened


def stripe_event(session_id: str, payment_id: str, kind: str = "checkout.session.completed",
                 amount: int = 1200) -> dict[str, object]:
    """A Stripe event about a Checkout Session, as Stripe sends it to payment-service's webhook endpoint."""
    return {"id": f"evt_{uuid.uuid4().hex}", "object": "event", "type": kind, "created": int(time.time()),
            "livemode": False, "data": {"object": {"id": session_id, "object": "checkout.session",
                                                   "client_reference_id": payment_id, "amount_total": amount,
                                                   "metadata": {"paymentId": payment_id}}}}


def stripe_signed(event: Mapping[str, object] | bytes, secret: str, t: int | None = None) -> tuple[bytes, str]:
    """The raw body and its `Stripe-Signature` (t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>)."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    ts = int(time.time()) if t is None else t
    return raw, f"t={ts},v1={hmac.new(secret.encode(), f'{ts}.'.encode() + raw, hashlib.sha256).hexdigest()}"
