"""PostgreSQL with little CPU to give one sale: the backends of one database held to a share of a core by a
cgroup's CPU quota, the rest of the server (other databases, the WAL writer) left alone.

On a deployment PostgreSQL is a machine of its own, busy with the whole sale (holds, payments, the seat map) and
every other sale of the chain: what one voucher's reservations get of it is a share. Here everything shares 2
cores, so without a limit PostgreSQL is never what a voucher's sale waits for; with one, it is, as it is when
its machine is busy. A backend is forked per connection, so a thread puts each new backend of the database into
the group as it appears (every POLL_SECONDS), and everything goes back to the parent group at the end.

The cgroup's cpu controller must be writable (cgroup v1 `cpu`, or v2 with `cpu` delegated): `available()`
says whether it is, and why not.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
POLL_SECONDS = 0.2


def _controller() -> Path | None:
    """The directory under which a group with a CPU quota can be made: v1's cpu hierarchy, else v2's root."""
    if (ROOT / "cpu" / "cpu.cfs_quota_us").exists():
        return ROOT / "cpu"
    controllers = ROOT / "cgroup.subtree_control"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return ROOT
    return None


def available() -> str | None:
    """None when a limit can be set here, else why not."""
    base = _controller()
    if base is None:
        return "no cgroup cpu controller (neither v1's cpu hierarchy nor v2's delegated cpu)"
    if not os.access(base, os.W_OK):
        return f"{base} is not writable (not root, or a read-only cgroup mount)"
    return None


def backends(database: str) -> list[int]:
    """The PostgreSQL backends serving `database` (their process title names it)."""
    def serves(entry: Path) -> bool:
        title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return title.startswith("postgres:") and f" {database} " in title
    return processes(serves)


def processes(matches: Callable[[Path], bool]) -> list[int]:
    """The pids of the processes whose /proc entry `matches` (one that ends meanwhile is left out)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if matches(entry):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


class CpuLimit:
    """`with CpuLimit("ticketing_test", 0.1):` the database's backends share a tenth of a core meanwhile."""

    def __init__(self, database: str, cores: float) -> None:
        base = _controller()
        if base is None or cores <= 0:
            raise RuntimeError(available() or f"a CPU share must be positive, not {cores}")
        self.database, self.cores, self.base = database, cores, base
        self.group = base / f"ticketing-bench-{os.getpid()}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> CpuLimit:
        self.group.mkdir(exist_ok=True)
        quota = max(1000, round(self.cores * PERIOD_US))
        if self.base == ROOT:  # v2: "quota period"
            (self.group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        else:
            (self.group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.group / "cpu.cfs_quota_us").write_text(str(quota))
        self._move(backends(self.database), self.group)
        self.thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop.set()
        self.thread.join()
        self._move([int(p) for p in (self.group / "cgroup.procs").read_text().split()], self.base)
        self.group.rmdir()

    def _follow(self) -> None:
        while not self.stop.wait(POLL_SECONDS):
            self._move(backends(self.database), self.group)

    @staticmethod
    def _move(pids: list[int], group: Path) -> None:
        for pid in pids:
            try:
                (group / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass  # it ended meanwhile
