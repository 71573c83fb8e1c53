"""The seat map: read from Redis when cached, else from Postgres (then cached), at most `ttl` stale.

Every committed seat change drops the entry (so the next read rebuilds it); the short TTL bounds staleness
when that drop is lost (Redis down, or a rebuild that read before the change committed). Redis down:
every read goes to Postgres.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import orjson
from ticketing.batching import TickBatcher

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.repository import Q
from hold_service.service_layer.ports import SeatMaps


def cache_key(showtime_id: int) -> str:
    return f"seatmap:{{{showtime_id}}}"


class CachedSeatMaps(SeatMaps):
    def __init__(self, pool: asyncpg.Pool, guard: RedisGuard, ttl_seconds: float) -> None:
        self.pool, self.guard, self.ttl_ms = pool, guard, int(ttl_seconds * 1000)
        # Holds committing together (a wave of freed seats) drop their showtime's entry with one DEL.
        self._drops: TickBatcher[int, None, None] = TickBatcher(self._drop)

    async def get(self, showtime_id: int) -> dict[str, Any] | None:
        raw = await self.guard.call("seatmap.get", self.guard.client.get(cache_key(showtime_id)))
        if raw is not None:
            return dict(orjson.loads(raw))
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.seat_map, showtime_id)
        if row is None:
            return None
        fresh = {"showtimeId": showtime_id, "version": row["version"], "seats": row["seats"]}
        await self.guard.call("seatmap.put", self.guard.client.set(
            cache_key(showtime_id), orjson.dumps(fresh), px=self.ttl_ms))
        return fresh

    async def invalidate(self, showtime_id: int) -> None:
        await self._drops.add(showtime_id, None)

    async def _drop(self, showtime_id: int, _: list[None]) -> None:
        await self.guard.call("seatmap.invalidate", self.guard.client.delete(cache_key(showtime_id)))
