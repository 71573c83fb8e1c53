"""A real Redis Cluster for tests: six redis-server processes (three masters, a replica each) that the
project's own script starts (`deploy/local/cluster.sh redis-up`), on ports of their own, so a test proves
on the real thing that every script's keys share a slot (a CROSSSLOT fails it) and that a master's failover
is ridden out. The `redis_cluster` fixture (ticketing_testing.pytest_plugin) hands one out per session."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from ticketing_testing import REPO_ROOT

SCRIPT = REPO_ROOT / "deploy" / "local" / "cluster.sh"
NODES = 6


def _free_ports() -> int:
    """A first port whose six ports and their cluster bus ports (+10000) are all free, below the range
    `ticketing_testing.free_port` draws from and away from the fixed ports of the dev and cluster stacks."""
    while True:
        first = random.randrange(11000, 16000, 10)
        try:
            for port in (p + bus for p in range(first, first + NODES) for bus in (0, 10000)):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first


@dataclass
class LocalRedisCluster:
    directory: Path
    first_port: int

    @property
    def ports(self) -> list[int]:
        return list(range(self.first_port, self.first_port + NODES))

    @property
    def nodes(self) -> str:
        """REDIS_CLUSTER_NODES for it."""
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def run(self, *args: str, timeout: float = 120) -> str:
        env = {**os.environ, "CLUSTER_DIR": str(self.directory), "CLUSTER_REDIS_PORT": str(self.first_port)}
        done = subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"cluster.sh {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    @classmethod
    def start(cls, directory: Path) -> LocalRedisCluster:
        cluster = cls(directory, _free_ports())
        cluster.run("redis-up")
        return cluster

    def stop(self) -> None:
        self.run("redis-down")

    def master_of(self, key: str) -> int:
        """The port of the master serving `key`'s slot now."""
        client = redis.Redis(port=self.alive()[0], decode_responses=True)
        try:
            slot = int(client.execute_command("CLUSTER KEYSLOT", key))  # type: ignore[no-untyped-call]
            for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):  # type: ignore[no-untyped-call]
                if start <= slot <= end:
                    return int(master[1])
        finally:
            client.close()
        raise LookupError(f"no master serves slot {slot}")

    def alive(self) -> list[int]:
        up = []
        for port in self.ports:
            try:
                if redis.Redis(port=port, socket_timeout=0.5).ping():
                    up.append(port)
            except redis.RedisError:
                pass
        return up

    def kill(self, port: int) -> None:
        """SIGKILL: the node's data is gone (no persistence); its replica takes over after the node timeout."""
        self.run("redis-kill", str(port))

    def restart(self, port: int) -> None:
        """Start a killed node again: it rejoins (as a replica, once its replica was promoted)."""
        self.run("redis-start", str(port))

    def wait_failover(self, key: str, dead: int, timeout: float = 30) -> int:
        """After the master `dead` serving `key` was killed: the port of the replica that took its slots over."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                master = self.master_of(key)
                if master != dead and master in self.alive():
                    return master
            except (redis.RedisError, LookupError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"no replica took over from {dead} within {timeout} s")

    def settle(self) -> None:
        """Every node up and in agreement, every replica in sync (what `redis-up` waits for)."""
        self.run("redis-up")
