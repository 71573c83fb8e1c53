"""S7, cheap floods, against hold-service and voucher-service started by the very command `make up` gives them
(deploy/local/supervisord.conf: `ticketing-run <service> api --workers 2`, so uvicorn with the head-size limit,
the peer's address deciding, two processes behind one port): 1 MiB headers get 431, hundreds
of seat-map streams from one address get 429 past SEAT_MAP_MAX_STREAMS_PER_ADDRESS, guessing voucher codes
learns nothing and is slowed to VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE, a spoofed X-Forwarded-For neither escapes
the per-address hold limit nor spends another address's, unknown showtime ids get 404; every flood leaves the
process's memory flat (resident and peak, from /proc) and other customers, at other addresses, unaffected.

Addresses: the client binds a loopback source address of its own (127.x.y.z: Linux routes all of 127/8 to
lo), so the attacker and the other customers are distinct peers. The spoofer of X-Forwarded-For is 127.0.0.1,
the address uvicorn believes such headers from unless told not to (what `make up` did). The stack has a Redis
database of its own, emptied first, so no count an earlier test left is anyone's here.
"""

from __future__ import annotations

import asyncio
import configparser
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis
from hold_service.config import HoldSettings
from ticketing import http_pool
from ticketing.auth import issue_token
from ticketing_testing import REPO_ROOT, env, free_port, service_process
from ticketing_testing.workers import own_redis_db
from voucher_service.config import VoucherSettings

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LOGS = REPO_ROOT / "var" / "log" / "tests" / "e2e-floods"
READS_AT_ONCE = 25  # below half of SHED_MAX_IN_FLIGHT's default (64): seat-map reads are shed past half
MIGRATIONS = {
    "HOLD_DATABASE_URL": REPO_ROOT / "services/hold-service/src/hold_service/sql/migrations",
    "VOUCHER_DATABASE_URL": REPO_ROOT / "services/voucher-service/src/voucher_service/sql/migrations",
}
PER_ADDRESS_HOLDS = 10  # HOLD_RATE_LIMIT_PER_IP_PER_MINUTE for this stack (120 by default)
STREAMS_PER_ADDRESS, QUOTES_PER_MINUTE = 8, 30  # the defaults, left as the services read them
# Growth of resident and of peak memory a flood may cause: a 1 MiB header read whole by each of 20 connections,
# or a snapshot kept by each of hundreds of streams, would be several times this.
FLAT_BYTES = 12 * 1024 * 1024


def address() -> str:
    return f"127.{random.randint(1, 254)}.{random.randint(0, 254)}.{random.randint(1, 254)}"


def make_up_command(program: str) -> list[str]:
    """The program's command in make up's supervisord.conf, as arguments of `python` (the same entry point)."""
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(REPO_ROOT / "deploy/local/supervisord.conf")
    argv = conf[f"program:{program}"]["command"].split()
    if argv[0] == "nice":  # the money path's priority (nice -n -10): not the service's command
        argv = argv[3:]
    assert argv[0] == ".venv/bin/ticketing-run", argv
    return ["-m", "ticketing.launcher", *argv[1:]]


LIMITS = ("rate_limit", "per_address", "trusted_proxies")  # in the names of the settings that limit clients


def test_make_up_runs_the_limits_as_deployed() -> None:
    """No program of make up is given a limit of its own (or a proxy to believe): `make up` answers a flood as a
    deployment does, which deploy/tests/readme_path.sh probes on the running stack."""
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(REPO_ROOT / "deploy/local/supervisord.conf")
    limits = {name.upper() for settings in (HoldSettings, VoucherSettings) for name in settings.model_fields
              if any(word in name for word in LIMITS)}
    assert {"HOLD_RATE_LIMIT_PER_IP_PER_MINUTE", "SEAT_MAP_MAX_STREAMS_PER_ADDRESS", "TRUSTED_PROXIES",
            "VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE"} <= limits
    given = {section: {pair.split("=", 1)[0].strip() for pair in conf[section].get("environment", "").split(",")}
             for section in conf.sections() if section.startswith("program:")}
    assert {section: names & limits for section, names in given.items() if names & limits} == {}


@pytest.fixture(scope="module")
def stack(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str, tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    dsn = {name: migrated_dsn(name, folder) for name, folder in MIGRATIONS.items()}
    ports = {"hold": free_port(), "voucher": free_port()}
    own_redis = own_redis_db(redis_url, 2)
    redis.Redis.from_url(own_redis).flushdb()
    common = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": own_redis, "APP_ENV": "dev",
              "LOG_LEVEL": "WARNING", "HOLD_RATE_LIMIT_PER_MINUTE": "1000000",
              "HOLD_RATE_LIMIT_PER_IP_PER_MINUTE": str(PER_ADDRESS_HOLDS),
              # The stream cap holds over both processes only while Redis answers (else each counts its own, by
              # design); on a loaded test machine 300 leases asked at once can take longer than 0.2 s.
              "REDIS_SOCKET_TIMEOUT_SECONDS": "5", **dsn}
    LOGS.mkdir(parents=True, exist_ok=True)
    with ExitStack() as procs:
        pid, url = {}, {}
        for name in ("hold", "voucher"):
            url[name] = f"http://127.0.0.1:{ports[name]}"
            metrics = tmp_path_factory.mktemp(f"{name}-metrics")  # as make up: /metrics adds up both processes
            proc = procs.enter_context(service_process(
                make_up_command(f"{name}-api"),
                {**common, "HTTP_PORT": str(ports[name]), "PROMETHEUS_MULTIPROC_DIR": str(metrics)},
                ready_url=f"{url[name]}/readyz?check=postgres", timeout=90, log_path=LOGS / f"{name}-api.log"))
            pid[name] = proc.pid  # the launcher execs uvicorn: its supervisor, the workers are its children
        yield {"url": url, "pid": pid, "port": ports, "secret": env("JWT_SECRET")}


def memory(pid: int) -> dict[str, int]:
    """Resident (VmRSS) and peak resident (VmHWM) memory of the server, its worker processes included, bytes."""
    pids = [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    total = {"VmRSS": 0, "VmHWM": 0}
    for p in pids:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{p}/status").read_text().splitlines())
        for k in total:
            total[k] += int(fields[k].split()[0]) * 1024
    return total


def assert_flat(before: dict[str, int], after: dict[str, int], what: str) -> None:
    grown = {k: after[k] - before[k] for k in before}
    print(f"\n[S7] {what}: resident {before['VmRSS'] / 2**20:.1f} -> {after['VmRSS'] / 2**20:.1f} MiB, "
          f"peak {before['VmHWM'] / 2**20:.1f} -> {after['VmHWM'] / 2**20:.1f} MiB")
    assert all(g < FLAT_BYTES for g in grown.values()), f"{what}: memory grew {grown}"


def auth(stack: dict[str, Any], sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(stack['secret'], sub=str(sub), role=role)}"}  # type: ignore[arg-type]


def client(source: str | None = None) -> httpx.AsyncClient:
    """An idle connection kept under the server's keep-alive (http_pool): a pause (say, reading the server's
    memory) of about its 5 s otherwise sends the next request on a connection the server is closing."""
    limits = httpx.Limits(keepalive_expiry=http_pool.KEEPALIVE_SECONDS)
    transport = httpx.AsyncHTTPTransport(local_address=source, limits=limits) if source else None
    return httpx.AsyncClient(transport=transport, timeout=30, limits=limits)


async def new_showtime(stack: dict[str, Any], rows: int = 15) -> int:
    sid = random.randint(10**8, 2 * 10**9)
    starts = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    async with client() as c:
        r = await c.post(f"{stack['url']['hold']}/admin/showtimes", headers=auth(stack, 1, "admin"), json={
            "showtimeId": sid, "title": "Flood", "startsAt": starts, "priceCents": 1200,
            "rows": {chr(ord("A") + n): 20 for n in range(rows)}})
    assert r.status_code == 201, r.text
    return sid


async def raw_exchange(port: int, request: bytes, source: str) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        for start in range(0, len(request), 65536):
            writer.write(request[start:start + 65536])
            try:
                await writer.drain()
            except ConnectionError:
                break  # answered and closed before the rest was sent
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return int(status.split()[1]), {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in lines)}, body


async def test_s7_one_mib_headers_get_431_unread(stack: dict[str, Any]) -> None:
    sid = await new_showtime(stack)
    huge = b"Bearer " + b"A" * 2**20
    paths = {"hold": b"POST /showtimes/%d/holds" % sid, "voucher": b"GET /vouchers/FLASH/quote?orderAmount=1"}
    for name, line in paths.items():
        async with client() as c:  # a round of ordinary requests first: what the process holds anyway
            await c.get(f"{stack['url'][name]}/healthz")
        before = memory(stack["pid"][name])
        request = line + b" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 2\r\n" \
                         b"Authorization: " + huge + b"\r\n\r\n{}"
        answers = await asyncio.gather(*(raw_exchange(stack["port"][name], request, address()) for _ in range(20)))
        for status, headers, body in answers:
            assert status == 431 and orjson.loads(body)["error"] == "HEADERS_TOO_LARGE", (status, body[:200])
            assert headers["x-content-type-options"] == "nosniff" and headers["content-type"] == "application/json"
        assert_flat(before, memory(stack["pid"][name]), f"20 x 1 MiB headers to {name}-service")
        async with client() as c:
            metrics = (await c.get(f"{stack['url'][name]}/metrics")).text
        assert "ticketing_http_headers_too_large_total 20.0" in metrics
    async with client() as c:
        seats = (await c.get(f"{stack['url']['hold']}/showtimes/{sid}/seats")).json()["seats"]
    assert {s["status"] for s in seats} == {"AVAILABLE"}  # no request behind those headers ran


async def open_stream(port: int, sid: int, source: str) -> tuple[int, dict[str, str], asyncio.StreamReader,
                                                                 asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(b"GET /showtimes/%d/seats/stream HTTP/1.1\r\nHost: t\r\n\r\n" % sid)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    status, *lines = head.decode("latin-1").strip().split("\r\n")
    return int(status.split()[1]), {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in lines)}, reader, writer


async def test_s7_hundreds_of_streams_from_one_address(stack: dict[str, Any]) -> None:
    sid, attacker, other = await new_showtime(stack), address(), address()
    port, pid = stack["port"]["hold"], stack["pid"]["hold"]
    warm = await open_stream(port, sid, other)
    warm[3].close()
    await asyncio.sleep(0.5)
    before = memory(pid)
    opened = await asyncio.gather(*(open_stream(port, sid, attacker) for _ in range(300)))
    statuses = [status for status, *_ in opened]
    assert statuses.count(200) == STREAMS_PER_ADDRESS and statuses.count(429) == 300 - STREAMS_PER_ADDRESS, \
        f"answered {dict(Counter(statuses))}"
    refused = next(o for o in opened if o[0] == 429)
    assert int(refused[1]["retry-after"]) >= 1 and refused[1]["x-content-type-options"] == "nosniff"
    body = orjson.loads(await refused[2].readexactly(int(refused[1]["content-length"])))
    assert body["error"] == "RATE_LIMITED"
    # Another customer, at another address, streams and reads as usual meanwhile.
    status, headers, reader, writer = await open_stream(port, sid, other)
    assert status == 200 and headers["x-content-type-options"] == "nosniff"
    assert b"event: snapshot" in await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)
    async with client(address()) as c:
        assert (await c.get(f"{stack['url']['hold']}/showtimes/{sid}/seats")).status_code == 200
    for _, _, _, w in opened:
        w.close()
    writer.close()
    await asyncio.sleep(1.0)
    after = memory(pid)
    assert_flat(before, after, "300 streams from one address (8 served), then closed")
    again = await open_stream(port, sid, attacker)  # its streams ended: their leases came back
    assert again[0] == 200
    again[3].close()


async def test_s7_voucher_codes_cannot_be_guessed(stack: dict[str, Any]) -> None:
    url = stack["url"]["voucher"]
    now = datetime.now(UTC)
    code, ended = f"REAL{uuid.uuid4().hex[:8].upper()}", f"OLD{uuid.uuid4().hex[:8].upper()}"
    async with client() as c:
        for name, starts, ends in ((code, now - timedelta(hours=1), now + timedelta(hours=1)),
                                   (ended, now - timedelta(hours=2), now - timedelta(hours=1))):
            r = await c.post(f"{url}/admin/vouchers", headers=auth(stack, 1, "admin"), json={
                "code": name, "discountAmount": 500, "minOrderAmount": 0, "totalLimit": 10, "perUserLimit": 1,
                "startsAt": starts.isoformat(), "endsAt": ends.isoformat(), "flashSale": False})
            assert r.status_code == 201, r.text
    guesser, honest = random.randint(10**9, 2 * 10**9), random.randint(2 * 10**9, 3 * 10**9)
    before = memory(stack["pid"]["voucher"])
    async with client(address()) as c:
        async def quote(who: int, name: str) -> httpx.Response:
            return await c.get(f"{url}/vouchers/{name}/quote", params={"orderAmount": 5000}, headers=auth(stack, who))

        unknown, old = await quote(guesser, f"GUESS{uuid.uuid4().hex[:6].upper()}"), await quote(guesser, ended)
        assert unknown.status_code == old.status_code == 200
        assert {**unknown.json(), "code": ""} == {**old.json(), "code": ""} == {
            "code": "", "eligible": False, "discountAmount": 0, "reason": "INVALID"}  # no oracle
        guesses = [await quote(guesser, f"GUESS{n:06d}") for n in range(QUOTES_PER_MINUTE + 20)]
    statuses = [r.status_code for r in guesses]
    assert statuses == [200] * (QUOTES_PER_MINUTE - 2) + [429] * 22
    assert guesses[-1].json()["error"] == "RATE_LIMITED" and int(guesses[-1].headers["retry-after"]) >= 1
    async with client(address()) as c:
        honest_quote = await c.get(f"{url}/vouchers/{code}/quote", params={"orderAmount": 5000},
                                   headers=auth(stack, honest))
    assert honest_quote.status_code == 200 and honest_quote.json()["eligible"] is True
    assert_flat(before, memory(stack["pid"]["voucher"]), "50 quotes of guessed codes")


async def test_s7_a_spoofed_forwarded_for_changes_nothing(stack: dict[str, Any]) -> None:
    sid, spoofer, victim = await new_showtime(stack), "127.0.0.1", address()
    seats = iter(f"{row}{n}" for row in "ABCDEFGHIJKLMNO" for n in range(1, 21))

    async def hold(c: httpx.AsyncClient, forwarded: str | None) -> int:
        headers = {**auth(stack, random.randint(10**9, 2 * 10**9)),
                   **({"X-Forwarded-For": forwarded} if forwarded else {})}
        r = await c.post(f"{stack['url']['hold']}/showtimes/{sid}/holds", json={"seats": [next(seats)]},
                         headers=headers)
        return r.status_code

    async with client(spoofer) as c:  # a new address in every header: the peer is still one address
        fresh = [await hold(c, address()) for _ in range(PER_ADDRESS_HOLDS + 5)]
    assert fresh == [201] * PER_ADDRESS_HOLDS + [429] * 5
    framer = address()
    async with client(framer) as c:  # the victim's address in every header: the framer's own budget is spent
        framed = [await hold(c, victim) for _ in range(PER_ADDRESS_HOLDS + 2)]
    assert framed == [201] * PER_ADDRESS_HOLDS + [429] * 2
    async with client(victim) as c:  # and the victim's is untouched
        assert await hold(c, None) == 201


async def test_s7_unknown_showtime_ids_get_404_and_leave_memory_flat(stack: dict[str, Any]) -> None:
    url, pid = stack["url"]["hold"], stack["pid"]["hold"]
    async with client(address()) as c:
        for sid in random.sample(range(3 * 10**9, 4 * 10**9), 200):  # a warm-up round
            await c.get(f"{url}/showtimes/{sid}/seats")
        before = memory(pid)
        ids = random.sample(range(4 * 10**9, 5 * 10**9), 3000)
        # At most READS_AT_ONCE in flight: within a process's share for seat-map reads (half of SHED_MAX_IN_FLIGHT)
        # even when every one lands on the same worker, so what answers is the lookup, not the load shedder.
        for start in range(0, len(ids), READS_AT_ONCE):
            answers = await asyncio.gather(*(c.get(f"{url}/showtimes/{sid}/seats")
                                             for sid in ids[start:start + READS_AT_ONCE]))
            assert {(r.status_code, r.json()["error"]) for r in answers} == {(404, "NOT_FOUND")}
        streams = await asyncio.gather(*(c.get(f"{url}/showtimes/{sid}/seats/stream") for sid in ids[:READS_AT_ONCE]))
        assert {r.status_code for r in streams} == {404}
    assert_flat(before, memory(pid), "3,000 unknown showtime ids")
