"""The database on cores of its own: PostgreSQL on one core, everything that serves or loads it on the other.

On a deployment the API runs in pods of its own and PostgreSQL on a machine of its own. Here everything shares 2
cores, so the service's figure against pgbench's replay measures how much Python takes from the database as much as
what a hold costs. Inside `with CoresSplit():` every PostgreSQL process (its backends forked meanwhile inherit it
from the postmaster) runs on DB_CORE only, and Redis and this process's threads (with what they start meanwhile:
the service's workers, wrk, pgbench) on the other. Each process's own set of cores comes back at the end; a
backend forked meanwhile gets every core this process had. Needs 2 cores and the right to move other users' processes
(root, or CAP_SYS_NICE): `available()` says whether this machine has them, and why not.
"""

from __future__ import annotations

import os
from types import TracebackType

from pg_cpu_limit import processes

DB_CORE = 0
DATABASE, SERVERS = "postgres", ("redis-server",)  # process names (/proc/<pid>/comm)


def available() -> str | None:
    """None when the split can be made here, else why not."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2 or DB_CORE not in cores:
        return f"needs core {DB_CORE} and another, this process may run on {sorted(cores)}"
    if not named(DATABASE):
        return "no PostgreSQL process on this machine"
    try:
        for pid in named(DATABASE)[:1]:
            os.sched_setaffinity(pid, os.sched_getaffinity(pid))
    except PermissionError:
        return "moving PostgreSQL's processes needs root or CAP_SYS_NICE"
    return None


def named(name: str) -> list[int]:
    return processes(lambda entry: (entry / "comm").read_text().strip() == name)


def own_threads() -> list[int]:
    return [int(tid) for tid in os.listdir("/proc/self/task")]


class CoresSplit:
    """`with CoresSplit() as split:` PostgreSQL on `split.database_cores`, Redis and this process on
    `split.other_cores`, until the end of the block."""

    def __init__(self) -> None:
        why = available()
        if why is not None:
            raise RuntimeError(f"cannot give the database a core of its own: {why}")
        cores = os.sched_getaffinity(0)
        self.database_cores, self.other_cores = {DB_CORE}, cores - {DB_CORE}
        self._saved: dict[int, set[int]] = {}
        self._default = cores  # what a backend forked meanwhile gets back

    def __enter__(self) -> CoresSplit:
        self._move(named(DATABASE), self.database_cores)
        self._move([pid for name in SERVERS for pid in named(name)] + own_threads(), self.other_cores)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for pid in named(DATABASE):  # backends forked meanwhile too
            self._set(pid, self._saved.get(pid, self._default))
        for pid, cores in self._saved.items():
            self._set(pid, cores)

    def _move(self, pids: list[int], cores: set[int]) -> None:
        for pid in pids:
            try:
                self._saved.setdefault(pid, os.sched_getaffinity(pid))
            except OSError:
                continue  # it ended meanwhile
            self._set(pid, cores)

    @staticmethod
    def _set(pid: int, cores: set[int]) -> None:
        try:
            os.sched_setaffinity(pid, cores)
        except ProcessLookupError:
            pass  # it ended meanwhile
