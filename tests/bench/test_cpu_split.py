"""BENCH_GRANTED_SPLIT's split (cpu_split.CoresSplit) against the real PostgreSQL and Redis: the database's
processes, those it forks meanwhile included, on a core of their own; Redis, this process and what it starts on the
other; every process's cores back at the end. Serial: for its moment the whole server has one core."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from bench_holds import DSN
from cpu_split import DATABASE, CoresSplit, available, named

pytestmark = [pytest.mark.integration, pytest.mark.serial]


async def backend(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT pg_backend_pid()"))


def cores_of_a_child() -> set[int]:
    out = subprocess.run([sys.executable, "-c", "import os; print(*os.sched_getaffinity(0))"], capture_output=True,
                         text=True, check=True).stdout
    return {int(core) for core in out.split()}


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_the_database_runs_on_a_core_of_its_own_and_every_process_gets_its_cores_back() -> None:
    assert available() is None
    mine, before = os.sched_getaffinity(0), await asyncpg.connect(DSN)
    redis = named("redis-server")
    assert redis, "make infra starts Redis"
    had = {pid: os.sched_getaffinity(pid) for pid in [*named(DATABASE), *redis]}
    meanwhile = None
    try:
        with CoresSplit() as split:
            assert split.database_cores.isdisjoint(split.other_cores)
            assert split.database_cores | split.other_cores == mine
            meanwhile = await asyncpg.connect(DSN)  # a backend forked during the split
            for pid in (await backend(before), await backend(meanwhile), *had.keys() - set(redis)):
                assert os.sched_getaffinity(pid) == split.database_cores
            for pid in redis:
                assert os.sched_getaffinity(pid) == split.other_cores
            assert os.sched_getaffinity(0) == split.other_cores
            assert cores_of_a_child() == split.other_cores  # the service, wrk and pgbench start from here
        for pid, cores in had.items():
            if Path(f"/proc/{pid}").exists():
                assert os.sched_getaffinity(pid) == cores
        assert os.sched_getaffinity(await backend(meanwhile)) == mine  # forked meanwhile: every core it may use
        assert os.sched_getaffinity(0) == mine and cores_of_a_child() == mine
        late = await asyncpg.connect(DSN)  # forked after: the postmaster's own cores again
        try:
            pid = await backend(late)
            assert os.sched_getaffinity(pid) == had[parent(pid)]
        finally:
            await late.close()
    finally:
        await before.close()
        if meanwhile is not None:
            await meanwhile.close()
