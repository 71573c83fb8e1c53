"""Scenario R12 (docs/reliability.md): PostgreSQL restarted mid-sale under the real hold-service process.

Two faults: a fast restart (`pg_ctlcluster restart -m fast`, often ridden through by the pool's
reconnects) and an outage of a few seconds (stop, wait, start) that requests must meet. Clients must see
503 (never 500) while Postgres is away, every 201 must be backed by committed rows (nothing acknowledged
is lost), no seat may end with two holders, and the service must recover by itself.
"""

import asyncio
import fcntl
import random
import subprocess
import time
import uuid

import asyncpg
import httpx
import pytest
from ticketing.auth import issue_token
from ticketing_testing import REPO_ROOT, env, free_port, service_process
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.serial]  # restarts everyone's Postgres
MIGRATIONS = REPO_ROOT / "services/hold-service/src/hold_service/sql/migrations"
SEATS = [f"{row}{n}" for row in "ABCDEFGHIJ" for n in range(1, 31)]  # 300 seats
# Held while PostgreSQL is restarted: any other run that faults the shared server takes it too. (The cluster fault
# run has a PostgreSQL of its own, Patroni's, and does not need it.)
POSTGRES_FAULTS_LOCK = REPO_ROOT / "var" / "run" / "postgres-faults.lock"


@pytest.fixture
def alone_on_postgres():
    POSTGRES_FAULTS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with POSTGRES_FAULTS_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def hold_api(alone_on_postgres, migrated_dsn, redis_url, kafka_bootstrap):
    dsn = migrated_dsn("HOLD_DATABASE_URL", MIGRATIONS)
    port = free_port()
    env_vars = {"HOLD_DATABASE_URL": dsn, "DATABASE_URL": dsn, "REDIS_URL": redis_url, "JWT_SECRET": env("JWT_SECRET"),
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, **UNLIMITED_HOLDS}
    args = ["-m", "uvicorn", "--factory", "hold_service.entrypoints.api.app:get_application",
            "--host", "127.0.0.1", "--port", str(port)]
    log = REPO_ROOT / "var/log/tests/r12-hold-api.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with service_process(args, env_vars, ready_url=f"http://127.0.0.1:{port}/healthz", log_path=log):
        yield f"http://127.0.0.1:{port}", dsn


def bearer(sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(env('JWT_SECRET'), sub=str(sub), role=role)}"}


@pytest.mark.timeout(900)  # the lock may wait for the whole cluster fault run
async def test_r12_postgres_restart_mid_sale_gives_503_never_500(hold_api):
    base, dsn = hold_api
    showtime = random.randint(10**9, 2**52)
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        r = await client.post("/admin/showtimes", headers=bearer(1, "admin"), json={
            "showtimeId": showtime, "title": "R12", "startsAt": "2030-01-01T20:00:00Z", "priceCents": 900,
            "rows": {row: 30 for row in "ABCDEFGHIJ"}})
        assert r.status_code == 201, r.text
        statuses: dict[int, int] = {}
        held: dict[str, list[str]] = {}
        unavailable_at: list[float] = []
        ok_at: list[float] = []
        restarted_at: list[float] = []

        async def customer() -> None:
            seats = random.sample(SEATS, 2)
            resp = await client.post(f"/showtimes/{showtime}/holds", json={"seats": seats},
                                     headers=bearer(random.randint(10**6, 10**12)))
            statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
            assert resp.status_code != 500, resp.text
            if resp.status_code == 503:
                assert resp.json()["error"] == "UNAVAILABLE"
                unavailable_at.append(time.monotonic())
            if resp.status_code == 201:
                held[resp.json()["holdId"]] = resp.json()["seats"]
                ok_at.append(time.monotonic())

        fault_over: list[float] = []

        async def load() -> None:  # until 3 s after Postgres is back, to see the recovery
            while not fault_over or time.monotonic() < fault_over[0] + 3:
                await asyncio.gather(*(customer() for _ in range(5)))
                await asyncio.sleep(0.1)

        async def infra(command: str) -> None:
            await asyncio.to_thread(subprocess.run, [str(REPO_ROOT / "deploy/local/infra.sh"), command],
                                    check=True, capture_output=True)

        async def fault() -> None:
            await asyncio.sleep(1.0)
            await infra("pg-restart")
            await asyncio.sleep(1.0)
            restarted_at.append(time.monotonic())
            try:
                await infra("pg-stop")
                await asyncio.sleep(3.0)
            finally:
                await infra("pg-start")
                fault_over.append(time.monotonic())

        await asyncio.gather(load(), fault())

    conn = await asyncpg.connect(dsn)
    try:
        for hold_id, seats in held.items():  # every acknowledged hold is committed and intact
            owners = await conn.fetch("SELECT seat_code FROM show_seat WHERE showtime_id = $1 AND hold_id = $2",
                                      showtime, uuid.UUID(hold_id))
            assert sorted(r["seat_code"] for r in owners) == sorted(seats)
        orphan = await conn.fetchval("""SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status = 'HELD'
                                        AND hold_id IS NULL""", showtime)
        assert orphan == 0
    finally:
        await conn.close()
    assert statuses.get(500, 0) == 0
    assert statuses.get(503, 0) > 0, f"no request met the outage: {statuses}"
    assert set(statuses) <= {201, 409, 503}, statuses
    assert max(ok_at) > max(unavailable_at), "the service did not recover by itself"
    recovery = max(unavailable_at) - restarted_at[0]
    print(f"\nR12: statuses {dict(sorted(statuses.items()))}, last 503 {recovery:.1f}s after the outage began, "
          f"{len(held)} acknowledged holds all committed, no seat with two holders")

