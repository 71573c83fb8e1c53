"""A Lua script called with EVALSHA in one round trip (NOSCRIPT: load it and retry once), and several script
calls sent together (`run_together`).

redis-py's `Script.__call__` does the same as `LuaScript` but pays a Protocol isinstance check on every call,
and every hold request makes these calls (docs/benchmarks.md, "Figures behind the code").

Sent together: on one Redis node, the calls' EVALSHAs go in ONE round trip on one pooled connection
(`pipelined`); on a Redis Cluster they are separate calls made concurrently, each to the node owning its
keys' slot (a cluster pipeline refuses EVALSHA, and the calls' keys are in different slots anyway: one
customer's limit, one address's, one showtime's seats). Each script's keys share one hash tag either way.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError
from ticketing.redis_client import RedisClient, is_cluster

LUA = Path(__file__).parent / "lua"


class LuaScript:
    def __init__(self, client: RedisClient, name: str) -> None:
        self.client = client
        self.source = (LUA / name).read_text()
        self.sha = hashlib.sha1(self.source.encode(), usedforsecurity=False).hexdigest()  # Redis names scripts so

    async def __call__(self, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]
        except NoScriptError:  # a restarted or flushed Redis (a promoted replica) forgot it
            self.sha = await self.client.script_load(self.source)  # type: ignore[misc]
            return await self.client.evalsha(self.sha, len(keys), *keys, *args)  # type: ignore[misc]


Call = tuple[LuaScript, list[str], list[Any]]  # a script, its keys, its arguments


async def run_together(client: RedisClient, calls: list[Call]) -> list[Any]:
    """Every call's answer, in order; the first failure raises (after all of them ended)."""
    if is_cluster(client):
        results = await asyncio.gather(*(script(keys, args) for script, keys, args in calls), return_exceptions=True)
    else:
        assert isinstance(client, aioredis.Redis)
        results = await pipelined(client, [("EVALSHA", s.sha, len(k), *k, *a) for s, k, a in calls])
        for i, (script, keys, args) in enumerate(calls):
            if isinstance(results[i], NoScriptError):  # that one did not run
                results[i] = await script(keys, args)  # loads it, runs it
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)


async def pipelined(client: aioredis.Redis, commands: list[tuple[Any, ...]]) -> list[Any]:
    """The commands in one round trip on one pooled connection, replies read in order; an error reply
    (NOSCRIPT) comes back as its exception, for the caller; a timeout raises TimeoutError (an OSError).

    Plain commands, not Script objects (a pipeline holding Script objects first checks and loads them,
    SCRIPT EXISTS, on every execute), and not redis-py's Pipeline either: its bookkeeping (retry wrapper,
    observability, reset) costs more per call than these few lines, on the path most requests take. Packed by
    hiredis (C, the same bytes), where redis-py's asyncio connection packs in Python (docs/benchmarks.md has the
    figures). Only redis-py's public connection API is used (get_connection, send_packed_command,
    read_response, disconnect, release).
    """
    pool = client.connection_pool
    conn = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await conn.send_packed_command(b"".join([hiredis.pack_command(command) for command in commands]))
        # One deadline for all the replies: read_response(timeout=inf) arms no timer of its own per reply.
        async with asyncio.timeout(conn.socket_timeout):
            return [await _reply(conn) for _ in commands]
    except BaseException:
        await conn.disconnect()  # a reply may be left unread: never hand this socket out again
        raise
    finally:
        await pool.release(conn)


async def _reply(conn: Any) -> Any:
    try:
        return await conn.read_response(timeout=math.inf)
    except ResponseError as exc:  # an error reply, read whole: the connection stays in step
        return exc
