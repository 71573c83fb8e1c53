"""Cluster mode as the fault run drives it: `deploy/local/cluster.sh` with a directory, ports and database of
the run's own (beside a dev cluster or stack on the same machine), its processes found and faulted.

Faults, each one the way it happens for real: SIGKILL (no shutdown hook runs) of a Kafka broker, a Redis
master or a service process (supervisord starts the service again, as Kubernetes would), SIGSTOP of a
consumer for longer than its session timeout (the group moves its partitions away, then takes it back).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from aiokafka.admin import AIOKafkaAdminClient
from deploy_support import DOTENV, REPO
from ticketing_testing.redis_cluster import LocalRedisCluster

SCRIPT = REPO / "deploy" / "local" / "cluster.sh"
ROLES = {"hold": "HOLD_DATABASE_URL", "payment": "PAYMENT_DATABASE_URL", "voucher": "VOUCHER_DATABASE_URL",
         "notifier": "NOTIFIER_DATABASE_URL"}


@dataclass
class Cluster:
    directory: Path
    port: int  # CLUSTER_PORT: every port of the cluster is derived from it
    database: str
    settings: dict[str, str] = field(default_factory=dict)  # for every service (shorter timings)
    address: dict[str, str] = field(default_factory=dict)  # `cluster.sh env`

    def sh(self, *args: str, timeout: float = 900) -> str:
        env = {**os.environ, **self.settings, "CLUSTER_DIR": str(self.directory), "CLUSTER_PORT": str(self.port),
               "CLUSTER_DATABASE": self.database, "CLUSTER_FRESH": "1"}
        done = subprocess.run([str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        assert done.returncode == 0, f"cluster.sh {' '.join(args)} exited {done.returncode}:\n" \
                                     f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
        return done.stdout

    def up(self) -> None:
        self.sh("clean")  # what an earlier run left behind (its logs stay)
        self.sh("up")
        self.address = dict(line.split("=", 1) for line in self.sh("env").split())

    @property
    def bootstrap(self) -> str:
        return self.address["KAFKA_BOOTSTRAP_SERVERS"]

    @property
    def redis(self) -> LocalRedisCluster:
        return LocalRedisCluster(self.directory, int(self.address["REDIS_CLUSTER_NODES"].split(",")[0].split(":")[1]))

    def dsn(self) -> dict[str, str]:
        """hold, payment, voucher, notifier -> that role's DSN on the cluster's database."""
        address = self.address["DATABASE_ADDRESS"]  # the primary's front door (HAProxy following Patroni)
        return {role: DOTENV[variable].rsplit("@", 1)[0] + f"@{address}/{self.database}"
                for role, variable in ROLES.items()}

    # --- the services (supervisord) ------------------------------------------------------------------

    def ctl(self, *args: str) -> str:
        done = subprocess.run([str(REPO / ".venv/bin/supervisorctl"), "-c", self.address["SUPERVISOR_CONF"], *args],
                              capture_output=True, text=True, timeout=60, check=False)
        return done.stdout.strip()

    def pid(self, program: str) -> int:
        return int(self.ctl("pid", program))

    def kill(self, program: str) -> int:
        """SIGKILL; supervisord starts it again. Returns the pid killed."""
        pid = self.pid(program)
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_running(self, program: str, not_pid: int, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "RUNNING" in self.ctl("status", program):
                pid = self.pid(program)
                if pid != not_pid:
                    return pid
            time.sleep(0.5)
        raise TimeoutError(f"{program} not running again after {timeout} s")

    def balanced(self, backend: str) -> int:
        """How many of the backend's instances HAProxy sends requests to now."""
        rows = httpx.get(self.address["HAPROXY_STATS_URL"] + ";csv", timeout=5).text.splitlines()
        return sum(1 for row in rows if row.startswith(f"{backend},{backend}-") and row.split(",")[17] == "UP")

    async def relay_leader(self, service: str = "hold", timeout: float = 60.0) -> str:
        """The worker program whose relay holds the service's relay lock (a session advisory lock): the relay names
        its connection with its pid (application_name), as the backend's client port is the balancer's. Right
        after a leader died the lock is free until a standing-by relay's next try takes it: waited for, up to
        `timeout`."""
        deadline = time.monotonic() + timeout
        conn = await asyncpg.connect(self.dsn()[service])
        try:
            while True:
                name = await conn.fetchval(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() "
                    "AND l.objsubid = 1 "
                    "AND l.objid::bigint = (hashtext(current_schema() || '.outbox-relay')::bigint & 4294967295)")
                if name or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
        finally:
            await conn.close()
        assert name, f"no relay of {service} holds the lock after {timeout:.0f} s"
        pid = int(name.rsplit(" ", 1)[1])
        for n in (1, 2):
            program = f"{service}-worker-{n}"
            if pid in (root := self.pid(program), *_children(root)):
                return program
        raise LookupError(f"no {service} worker runs the relay's process ({name})")

    # --- PostgreSQL (Patroni) ------------------------------------------------------------------------

    def pg_primary(self) -> int | None:
        """The node (1-3) Patroni calls the running primary, None while there is none."""
        out = self.sh("pg-primary", timeout=30).strip()
        return int(out) if out else None

    def pg_failover(self, timeout: float = 60) -> tuple[int, int, float, float]:
        """SIGKILL the primary's PostgreSQL; wait until another node is primary, then until the old one is back
        as a streaming standby. Returns (old, new, seconds to the promotion, seconds to the rejoin)."""
        old = self.pg_primary()
        assert old, "no primary before the kill"
        killed = time.monotonic()
        self.sh("pg-kill", str(old))
        while (new := self.pg_primary()) in (None, old):
            assert time.monotonic() < killed + timeout, f"no new primary {timeout} s after the kill"
            time.sleep(0.2)
        promoted = time.monotonic() - killed
        self.sh("pg-settle", "120")
        return old, new, promoted, time.monotonic() - killed

    # --- Kafka and Redis -----------------------------------------------------------------------------

    async def _partitions(self, topic: str) -> list[dict[str, Any]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            (described,) = await admin.describe_topics([topic])
        finally:
            await admin.close()
        return list(described["partitions"])

    async def busiest_leader(self, topic: str) -> tuple[int, list[int]]:
        """The broker leading most of `topic`'s partitions, and those partitions."""
        led: dict[int, list[int]] = {}
        for p in await self._partitions(topic):
            led.setdefault(p["leader"], []).append(p["partition"])
        broker = max(led, key=lambda b: len(led[b]))
        return broker, sorted(led[broker])

    async def in_sync(self, topic: str) -> bool:
        return all(len(p["isr"]) == 3 for p in await self._partitions(topic))

    def redis_master_of(self, key: str) -> int:
        return self.redis.master_of(key)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


async def until(check, timeout: float, interval: float = 0.5) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{check.__name__} not true after {timeout} s")
        await asyncio.sleep(interval)

