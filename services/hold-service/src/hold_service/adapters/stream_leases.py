"""How many seat-map streams each client address has open, over every API process: at most
SEAT_MAP_MAX_STREAMS_PER_ADDRESS (past it, 429).

Each open stream holds a lease in Redis (lua/stream_lease.lua): per address a sorted set of its streams,
each scored with when its lease ends. The process of a stream renews its leases every `renew_seconds`
(lua/stream_renew.lua) and removes a stream's lease when the stream ends; a process that dies leaves
leases that lapse within `lease_seconds`, so no address is shut out for longer than that.
Each process also counts its own streams per address and refuses past the limit without asking Redis:
with Redis down that count is the limit (per process, then), and streams are never refused for Redis
being down.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections import defaultdict

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript, run_together

RENEW_BATCH = 500  # addresses per round trip


def _key(address: str) -> str:
    return f"seatmap:streams:{{{address}}}"


class StreamLeases:
    def __init__(self, guard: RedisGuard | None, limit: int, *, lease_seconds: float = 60.0,
                 renew_seconds: float = 20.0) -> None:
        self.guard, self.limit = guard, limit
        self.lease_ms, self.renew_seconds = int(lease_seconds * 1000), renew_seconds
        self.open: defaultdict[str, set[str]] = defaultdict(set)  # address -> its streams in this process
        self._names = (f"{secrets.token_hex(6)}:{n}" for n in itertools.count())
        self._pending: set[asyncio.Task[object]] = set()
        if guard is not None:
            self.lease_script = LuaScript(guard.client, "stream_lease.lua")
            self.renew_script = LuaScript(guard.client, "stream_renew.lua")

    async def acquire(self, address: str) -> str | None:
        """A lease for one more stream of `address` (its name), or None: the address has its limit."""
        mine = self.open[address]
        if len(mine) >= self.limit:
            return None
        lease = next(self._names)
        mine.add(lease)  # counted at once: this process' other requests see it while Redis answers
        if self.guard is not None:
            granted = await self.guard.call("seatmap.lease", self.lease_script(
                [_key(address)], [self.limit, self.lease_ms, lease]))
            if granted == 0:
                self._forget(address, lease)
                return None
        return lease

    def release(self, address: str, lease: str) -> None:
        self._forget(address, lease)
        if self.guard is not None:
            task = asyncio.ensure_future(self.guard.call("seatmap.lease_release",
                                                         self.guard.client.zrem(_key(address), lease)))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def renew(self) -> None:
        """Every `renew_seconds` (LiveSeatMaps.tick): the leases of this process' open streams."""
        if self.guard is None:
            return
        streams = [(address, sorted(leases)) for address, leases in self.open.items()]
        client = self.guard.client
        for start in range(0, len(streams), RENEW_BATCH):
            calls = [(self.renew_script, [_key(a)], [self.lease_ms, *leases])
                     for a, leases in streams[start:start + RENEW_BATCH]]
            if await self.guard.call("seatmap.lease_renew", run_together(client, calls)) is None:
                return  # Redis is down: the local counts hold meanwhile

    def _forget(self, address: str, lease: str) -> None:
        mine = self.open.get(address)
        if mine is not None:
            mine.discard(lease)
            if not mine:
                del self.open[address]
