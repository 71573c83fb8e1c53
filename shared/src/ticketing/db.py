"""asyncpg pool and the SQL-file loader (named queries, as procrastinate does)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_delay, wait_exponential

from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^--\s*name:\s*(?P<name>[a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Queries:
    """Named queries read from `.sql` files: `-- name: claim_batch` then a description comment."""

    by_name: dict[str, str]

    def __getattr__(self, name: str) -> str:
        try:
            return self.by_name[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None

    @classmethod
    def load(cls, *paths: Path) -> Queries:
        found: dict[str, str] = {}
        for path in paths:
            text = path.read_text()
            marks = list(_NAME.finditer(text))
            for mark, following in zip(marks, [*marks[1:], None], strict=True):
                end = following.start() if following else len(text)
                body = "\n".join(line for line in text[mark.end():end].strip().splitlines()
                                 if not line.lstrip().startswith("--"))
                if mark["name"] in found:
                    raise ValueError(f"query {mark['name']!r} defined twice")
                found[mark["name"]] = body.strip().rstrip(";")
        return cls(found)


async def _init_connection(conn: asyncpg.Connection) -> None:
    for type_name in ("json", "jsonb"):
        await conn.set_type_codec(type_name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


CONNECT_WAIT_SECONDS = 60.0  # a process starting beside its database (create_pool)


async def create_pool(dsn: str, *, min_size: int = 2, max_size: int = 20, command_timeout: float = 10.0,
                      server_settings: Mapping[str, str] | None = None,
                      wait_seconds: float = CONNECT_WAIT_SECONDS, statement_cache_size: int = 100) -> asyncpg.Pool:
    """`server_settings`: Postgres settings for every connection of the pool (SET at connect).

    Waits up to `wait_seconds` for Postgres to answer: a process that starts beside its database (a pod, a
    compose stack, a container network whose DNS answers "temporary failure" while containers join it) is
    not lost to the first refused connection. A refusal that no wait changes (a wrong password, no such
    database) raises at once."""
    # asyncpg's default reset on release is kept on purpose: it rolls back what a failed unit of work
    # left open and discards a connection a cancelled query left busy (skipping it to save a round trip
    # returned such connections to the pool and turned a Postgres restart into 500s).
    async for attempt in AsyncRetrying(retry=retry_if_exception_type(TRANSIENT_ERRORS),
                                       stop=stop_after_delay(wait_seconds), wait=wait_exponential(0.2, max=2.0),
                                       before_sleep=_log_waiting, reraise=True):
        with attempt:
            pool = await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, init=_init_connection,
                                             command_timeout=command_timeout, timeout=5.0,
                                             statement_cache_size=statement_cache_size,
                                             server_settings=dict(server_settings or {}) or None)
    assert pool is not None
    return pool


def _log_waiting(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    log_action(logger, "db.waiting", f"Postgres does not answer yet: {error!r}", level=logging.WARNING,
               attempt=state.attempt_number, error=type(error).__name__)


@asynccontextmanager
async def released_in_background(pool: asyncpg.Pool) -> AsyncIterator[PoolConnectionProxy]:
    """`async with released_in_background(pool) as conn:` like `pool.acquire()`, but the connection goes
    back to the pool in a task of its own: the pool's reset on release (a round trip, and a turn of a busy
    event loop) is then not between the caller's last query and its answer. The reset still runs before
    anyone else gets the connection, and `pool.close()` waits for it."""
    conn: PoolConnectionProxy = await pool.acquire()
    try:
        yield conn
    finally:
        task = asyncio.get_running_loop().create_task(pool.release(conn))
        _releases.add(task)
        task.add_done_callback(_released)


_releases: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks


def _released(task: asyncio.Task[None]) -> None:
    _releases.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:  # the pool terminated the connection
        logger.warning("a connection could not be reset on release: %r", exc)


def sql_dir(package_file: str) -> Path:
    """The `sql/` folder beside a package's `__init__.py`."""
    return Path(package_file).resolve().parent / "sql"
