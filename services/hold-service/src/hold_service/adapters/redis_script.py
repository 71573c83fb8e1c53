"""A Lua script called with EVALSHA in one round trip (NOSCRIPT: load it and retry once), and several
script calls sent together in one round trip (`run_together`, `pipelined`).

redis-py's `Script.__call__` does the same but pays a Protocol isinstance check on every call, a
noticeable share of a worker's CPU on the gate path; this is the hot path of every hold request.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError

LUA = Path(__file__).parent / "lua"


class LuaScript:
    def __init__(self, client: aioredis.Redis, name: str) -> None:
        self.client = client
        self.source = (LUA / name).read_text()
        self.sha = hashlib.sha1(self.source.encode(), usedforsecurity=False).hexdigest()  # Redis names scripts so

    async def __call__(self, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]
        except NoScriptError:  # a restarted or flushed Redis forgot it
            self.sha = await self.client.script_load(self.source)
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]


Call = tuple[LuaScript, list[str], list[Any]]  # a script, its keys, its arguments
Send = Callable[[list[tuple[Any, ...]]], Awaitable[list[Any]]]


async def run_together(calls: list[Call], send: Send) -> list[Any]:
    """The calls' EVALSHAs sent together (`send`: `pipelined` on a client); a call whose script Redis no
    longer knows (NOSCRIPT: restarted or flushed) is loaded and run again on its own."""
    results = await send([("EVALSHA", s.sha, len(k), *k, *a) for s, k, a in calls])
    for i, (script, keys, args) in enumerate(calls):
        if isinstance(results[i], NoScriptError):  # that one did not run
            results[i] = await script(keys, args)  # loads it, runs it
        elif isinstance(results[i], Exception):
            raise results[i]
    return results


async def pipelined(client: aioredis.Redis, commands: list[tuple[Any, ...]]) -> list[Any]:
    """The commands in one round trip on one pooled connection, replies read in order; an error reply
    (NOSCRIPT) comes back as its exception, for the caller; a timeout raises TimeoutError (an OSError).

    Plain commands, not Script objects (a pipeline holding Script objects first checks and loads them,
    SCRIPT EXISTS, on every execute), and not redis-py's Pipeline either: its bookkeeping (retry wrapper,
    observability, reset) costs more per call than these few lines, on the path most requests take. Packed by
    hiredis (C, the same bytes): redis-py's asyncio connection packs in Python, several times slower, a
    visible share of a worker's CPU on the hold path (docs/benchmarks.md).
    """
    pool = client.connection_pool
    conn = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await conn.send_packed_command(b"".join([hiredis.pack_command(command) for command in commands]))
        # One deadline for all the replies. redis-py's read_response() arms a timer for each reply, about a
        # third of its cost; _read_response_from_parser() is the same read without it (redis is pinned in
        # shared/pyproject.toml). An error reply (NOSCRIPT) comes back as its exception object.
        async with asyncio.timeout(conn.socket_timeout):
            return [await conn._read_response_from_parser() for _ in commands]
    except BaseException:
        await conn.disconnect()  # a reply may be left unread: never hand this socket out again
        raise
    finally:
        await pool.release(conn)
