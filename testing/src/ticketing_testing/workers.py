"""One pytest-xdist worker's share of the infrastructure the whole suite shares.

`pytest -n 2` runs the suite in two worker processes (gw0, gw1) at once, on one PostgreSQL, one Redis and one
Kafka. What a test changes beyond its own ids is kept apart per worker:

- PostgreSQL: a database of its own, `<test database>_<worker>`, copied from the migrated test database
  (`CREATE DATABASE ... TEMPLATE`, deploy/local/clone_db.sh) before the workers start, so fixtures that
  TRUNCATE a table and consumers that read every row of an outbox see only their worker's rows;
- Redis: the tests that flush a logical database get their own per worker (`own_redis_db`); everything else
  shares the database REDIS_URL names, with keys of random ids, as it always did beside `make up`;
- Kafka: the topics are the contract's fixed names, shared; consumer groups that stay the same from run to run
  carry the worker in their prefix (`group_prefix`), so two workers never split one group's partitions.

Tests that restart the infrastructure itself, or read what the whole run published, are marked `serial` and
run in one process after the parallel phase (the Makefile's `test` target).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"... in a worker of `pytest -n`; else ""
CLONE_SCRIPT = Path(__file__).resolve().parents[3] / "deploy" / "local" / "clone_db.sh"
# Logical databases of the shared Redis for tests that flush one: this many per worker, counted down from 15
# (db 0 is everyone's: the other tests', and `make up`'s beside them).
OWN_REDIS_DBS = 3
REDIS_DATABASES = 16


def worker_index(worker: str = WORKER) -> int:
    return int(worker.removeprefix("gw")) if worker else 0


def worker_database(base: str, worker: str = WORKER) -> str:
    """The worker's test database: `base` itself outside xdist."""
    return f"{base}_{worker}" if worker else base


def group_prefix(base: str, worker: str = WORKER) -> str:
    """A consumer-group prefix that stays the same across runs, one per worker."""
    return f"{base}{worker}-" if worker else base


def own_redis_db(redis_url: str, which: int, worker: str = WORKER) -> str:
    """`redis_url` moved to logical database number `which` (0..OWN_REDIS_DBS-1) of this worker's own, for a
    test that flushes it: 15, 14, 13 outside xdist and for gw0, 12, 11, 10 for gw1, and so on."""
    if not 0 <= which < OWN_REDIS_DBS:
        raise ValueError(f"a worker has {OWN_REDIS_DBS} Redis databases of its own, not {which + 1}")
    db = REDIS_DATABASES - 1 - worker_index(worker) * OWN_REDIS_DBS - which
    if db <= 0:
        raise RuntimeError(f"too many xdist workers for the Redis databases of their own ({worker})")
    return urlunsplit(urlsplit(redis_url)._replace(path=f"/{db}"))


def copy_databases(template: str, names: list[str]) -> None:
    """Each of `names` dropped and made again as a copy of `template`, with the service roles' grants (nobody may
    be connected to `template` meanwhile)."""
    done = subprocess.run([str(CLONE_SCRIPT), template, *names], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"clone_db.sh {template} {' '.join(names)} failed ({done.returncode}):\n"
                           f"{done.stdout}{done.stderr}")
