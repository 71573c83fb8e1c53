"""A Lua script called with EVALSHA in one round trip (NOSCRIPT: load it and retry once).

redis-py's `Script.__call__` does the same but pays a Protocol isinstance check on every call, a
noticeable share of a worker's CPU on the gate path; this is the hot path of every hold request.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

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
