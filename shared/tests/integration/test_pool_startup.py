"""ticketing.db.create_pool at a process's start: it waits for a Postgres that does not answer yet, and
refuses at once what no wait changes (real Postgres, reached through a local TCP forwarder that opens late).

Every service builds its pool in its bootstrap. In the chart's test a hold-service API container exited
(uvicorn: "Application startup failed") because its first connection failed while a dozen containers joined
the network at once; a process that starts beside its database must not be lost to that.
"""

from __future__ import annotations

import asyncio
import logging
import time
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from ticketing.db import create_pool
from ticketing_testing import free_port

pytestmark = pytest.mark.integration


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _forwarder(port: int, target: tuple[str, int]) -> asyncio.Server:
    """127.0.0.1:`port` -> Postgres: a database that starts answering when this is called."""
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*target)
        await asyncio.gather(_forward(reader, up_writer), _forward(up_reader, writer))
    return await asyncio.start_server(pipe, "127.0.0.1", port)


def _through(dsn: str, port: int) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}@127.0.0.1:{port}"))


async def test_a_pool_created_before_postgres_answers_waits_for_it_and_works(platform_dsn, caplog) -> None:
    parts, port = urlsplit(platform_dsn), free_port()
    opened: list[asyncio.Server] = []

    async def open_late() -> None:
        await asyncio.sleep(1.5)  # connections to `port` are refused until then
        opened.append(await _forwarder(port, (parts.hostname or "127.0.0.1", parts.port or 5432)))

    late = asyncio.create_task(open_late())
    caplog.set_level(logging.WARNING, logger="ticketing.db")
    started = time.monotonic()
    pool = await create_pool(_through(platform_dsn, port), min_size=2, max_size=2, wait_seconds=20)
    try:
        assert time.monotonic() - started >= 1.5
        assert await pool.fetchval("SELECT 1") == 1
        waits = [r for r in caplog.records if getattr(r, "action", None) == "db.waiting"]
        assert waits and all(r.error == "ConnectionRefusedError" for r in waits)
    finally:
        await pool.close()
        await late
        opened[0].close()


async def test_a_postgres_that_never_answers_fails_the_start_after_the_wait() -> None:
    started = time.monotonic()
    with pytest.raises(OSError):
        await create_pool(f"postgresql://nobody:secret@127.0.0.1:{free_port()}/none", wait_seconds=1.0)
    assert 1.0 <= time.monotonic() - started < 5


async def test_a_refusal_no_wait_changes_fails_the_start_at_once(platform_dsn, caplog) -> None:
    parts = urlsplit(platform_dsn)
    wrong = urlunsplit(parts._replace(netloc=f"{parts.username}:not-the-password@{parts.hostname}:{parts.port}"))
    caplog.set_level(logging.WARNING, logger="ticketing.db")
    started = time.monotonic()
    with pytest.raises(asyncpg.InvalidPasswordError):
        await create_pool(wrong, wait_seconds=30)
    assert time.monotonic() - started < 5
    assert not [r for r in caplog.records if getattr(r, "action", None) == "db.waiting"]
