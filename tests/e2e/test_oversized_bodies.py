"""Scenario S6 (docs/reliability.md): 100 MB bodies to the hot hold POST and to the gateway callback get the
contract's 413, the service's memory stays flat, nothing changes; a body just under MAX_BODY_BYTES is served as usual.

Real processes (hold-service and payment-service APIs, test database, Redis, Kafka). Every body here is
one the service would act on if it read it: a valid hold request and a validly signed callback, padded
with JSON whitespace. So a 413 that came after reading it whole would show as a change in the database,
and reading it at all as a jump in the process's peak resident memory (VmHWM).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from ticketing.auth import issue_token
from ticketing_testing import REPO_ROOT, env, free_port, service_process, stripe_event, stripe_signed
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LIMIT = 65536  # the default MAX_BODY_BYTES, left as the services read it
HUGE = 100 * 1024 * 1024
LOGS = REPO_ROOT / "var" / "log" / "tests" / "e2e-oversized"
MIGRATIONS = {
    "HOLD_DATABASE_URL": REPO_ROOT / "services/hold-service/src/hold_service/sql/migrations",
    "PAYMENT_DATABASE_URL": REPO_ROOT / "services/payment-service/src/payment_service/sql/migrations",
}
WEBHOOK_SECRET = "whsec_oversized_0123456789abcdef0123456789"
# More memory than this, at peak, means the body was read: 100 MB cannot pass through unnoticed.
FLAT_MEMORY_BYTES = 25 * 1024 * 1024


def _uvicorn(factory: str, port: int) -> list[str]:
    return ["-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1", "--port", str(port)]


@pytest.fixture(scope="module")
def services(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str) -> Iterator[dict[str, Any]]:
    dsn = {name: migrated_dsn(name, folder) for name, folder in MIGRATIONS.items()}
    ports = {name: free_port() for name in ("hold", "pay")}
    url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    common = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url, "APP_ENV": "dev",
              "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, **UNLIMITED_HOLDS, **dsn}
    LOGS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as procs:
        pid = {}
        for name, factory in (("hold", "hold_service.entrypoints.api.app:get_application"),
                              ("pay", "payment_service.entrypoints.api.app:get_application")):
            proc = procs.enter_context(service_process(_uvicorn(factory, ports[name]), common,
                                                       ready_url=f"{url[name]}/healthz", timeout=90,
                                                       log_path=LOGS / f"{name}-api.log"))
            pid[name] = proc.pid
        yield {"url": url, "dsn": dsn, "pid": pid, "jwt": env("JWT_SECRET")}


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (bytes): a body read whole stays in it after it is freed."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc status")


def padded(body: bytes, size: int) -> bytes:
    return body + b" " * (size - len(body))


def streamed(body: bytes) -> Iterator[bytes]:
    """The body in 1 MiB chunks: sent chunked, without a Content-Length."""
    for start in range(0, len(body), 1 << 20):
        yield body[start:start + (1 << 20)]


def contract_413(response: httpx.Response) -> bool:
    return response.status_code == 413 and response.json()["error"] == "PAYLOAD_TOO_LARGE" and \
        isinstance(response.json()["message"], str)


def post_both_ways(url: str, body: bytes, headers: dict[str, str]) -> list[tuple[str, httpx.Response, float]]:
    answers = []
    for how, content in (("declared", body), ("chunked", streamed(body))):
        started = time.perf_counter()
        response = httpx.post(url, content=content, headers=headers, timeout=120)
        answers.append((how, response, time.perf_counter() - started))
    return answers


async def fetchval(dsn: str, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


def signed_callback(size: int) -> tuple[str, bytes, dict[str, str]]:
    """A correctly signed callback (for a payment nobody has: payment-service records its event id and
    answers "unknown"), padded to `size` bytes, the padding signed too."""
    event_id = f"evt_{uuid.uuid4().hex}"
    event = {**stripe_event(f"cs_{uuid.uuid4().hex}", str(uuid.uuid4())), "id": event_id}
    body, signature = stripe_signed(padded(json.dumps(event).encode(), size), WEBHOOK_SECRET)
    return event_id, body, {"Content-Type": "application/json", "Stripe-Signature": signature}


async def test_s6_callback_of_100_mb_is_refused_unread_and_one_under_the_limit_is_served(services) -> None:
    url, pay_dsn, pid = f"{services['url']['pay']}/payments/callback", services["dsn"]["PAYMENT_DATABASE_URL"], \
        services["pid"]["pay"]
    event_id, body, headers = signed_callback(HUGE)
    before = peak_rss(pid)
    answers = post_both_ways(url, body, headers)
    grown = peak_rss(pid) - before
    print("\nS6 callback:", ", ".join(f"{how} {r.status_code} in {s:.2f} s" for how, r, s in answers),
          f"; peak RSS +{grown / 2**20:.1f} MiB")
    assert all(contract_413(r) for _, r, _ in answers), [r.text[:200] for _, r, _ in answers]
    assert grown < FLAT_MEMORY_BYTES
    assert await fetchval(pay_dsn, "SELECT count(*) FROM gateway_event WHERE event_id = $1", event_id) == 0

    under_id, under, headers = signed_callback(LIMIT - 1)
    response = httpx.post(url, content=under, headers=headers, timeout=30)
    assert (response.status_code, response.json()["outcome"]) == (200, "unknown"), response.text
    assert await fetchval(pay_dsn, "SELECT count(*) FROM gateway_event WHERE event_id = $1", under_id) == 1


async def test_s6_hold_request_of_100_mb_is_refused_unread_and_one_under_the_limit_is_served(services) -> None:
    base, hold_dsn, pid = services["url"]["hold"], services["dsn"]["HOLD_DATABASE_URL"], services["pid"]["hold"]
    secret, showtime = services["jwt"], 10**9 + uuid.uuid4().int % 10**9
    admin = {"Authorization": f"Bearer {issue_token(secret, sub='1', role='admin')}"}
    created = httpx.post(f"{base}/admin/showtimes", headers=admin, timeout=30, json={
        "showtimeId": showtime, "title": "S6", "startsAt": "2031-01-01T20:00:00Z", "priceCents": 1200,
        "rows": {"A": 4}})
    assert created.status_code == 201, created.text
    customer = str(10**11 + uuid.uuid4().int % 10**11)
    headers = {"Authorization": f"Bearer {issue_token(secret, sub=customer, role='customer')}",
               "Content-Type": "application/json"}
    url = f"{base}/showtimes/{showtime}/holds"
    before = peak_rss(pid)
    answers = post_both_ways(url, padded(b'{"seats": ["A1", "A2"]}', HUGE), headers)
    grown = peak_rss(pid) - before
    print("\nS6 hold:", ", ".join(f"{how} {r.status_code} in {s:.2f} s" for how, r, s in answers),
          f"; peak RSS +{grown / 2**20:.1f} MiB")
    assert all(contract_413(r) for _, r, _ in answers), [r.text[:200] for _, r, _ in answers]
    assert grown < FLAT_MEMORY_BYTES
    held = "SELECT count(*) FROM booking WHERE showtime_id = $1"
    assert await fetchval(hold_dsn, held, showtime) == 0

    response = httpx.post(url, content=padded(b'{"seats": ["A3"]}', LIMIT - 1), headers=headers, timeout=30)
    assert response.status_code == 201, response.text
    assert response.json()["seats"] == ["A3"]
    assert await fetchval(hold_dsn, held, showtime) == 1


async def test_s6_bytes_past_a_declared_length_never_reach_the_app(services) -> None:
    """Why BodyLimit lets a declared length within the limit straight through: the server frames the body
    by it. A signed callback followed on its connection by 100 MB more: the app verifies and records the
    declared bytes alone (the signature covers exactly them), and the rest is refused as a request of its
    own, read and dropped as it streams."""
    target = urlsplit(services["url"]["pay"])
    pay_dsn, pid = services["dsn"]["PAYMENT_DATABASE_URL"], services["pid"]["pay"]
    event_id, body, headers = signed_callback(0)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    before = peak_rss(pid)
    reader, writer = await asyncio.open_connection(target.hostname, target.port)
    try:
        writer.write(f"POST /payments/callback HTTP/1.1\r\nHost: pay\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                     .encode() + body)
        await writer.drain()
        first = await reader.readuntil(b"\r\n")
        rest = b"\x00" * (1 << 20)
        try:
            for _ in range(HUGE >> 20):
                writer.write(rest)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the server refused the bytes after the body and closed the connection
    finally:
        writer.close()
    grown = peak_rss(pid) - before
    print(f"\nS6 past the declared length: first answer {first.strip().decode()}; peak RSS +{grown / 2**20:.1f} MiB")
    assert first.startswith(b"HTTP/1.1 200")
    assert await fetchval(pay_dsn, "SELECT count(*) FROM gateway_event WHERE event_id = $1", event_id) == 1
    assert grown < FLAT_MEMORY_BYTES
