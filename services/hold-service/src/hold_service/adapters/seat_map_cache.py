"""Seat-map cache in Redis: a read-mostly map served at most `ttl` seconds stale.

Every committed seat change deletes the entry (so the next read rebuilds it); the short TTL bounds
staleness when that delete is lost (Redis down, or a rebuild that read before the change committed).
"""

from __future__ import annotations

from typing import Any

import orjson
from ticketing.batching import TickBatcher

from hold_service.adapters.redis_guard import RedisGuard


def cache_key(showtime_id: int) -> str:
    return f"seatmap:{{{showtime_id}}}"


class SeatMapCache:
    """Port; this base class caches nothing (tests, or no Redis)."""

    async def get(self, showtime_id: int) -> dict[str, Any] | None:
        return None

    async def put(self, showtime_id: int, seat_map: dict[str, Any]) -> None:
        return None

    async def invalidate(self, showtime_id: int) -> None:
        return None


class RedisSeatMapCache(SeatMapCache):
    def __init__(self, guard: RedisGuard, ttl_seconds: float) -> None:
        self.guard, self.ttl_ms = guard, int(ttl_seconds * 1000)
        # Holds committing together (a wave of freed seats) drop their showtime's entry with one DEL.
        self._drops: TickBatcher[int, None, None] = TickBatcher(self._drop)

    async def get(self, showtime_id: int) -> dict[str, Any] | None:
        raw = await self.guard.call("seatmap.get", self.guard.client.get(cache_key(showtime_id)))
        return None if raw is None else dict(orjson.loads(raw))

    async def put(self, showtime_id: int, seat_map: dict[str, Any]) -> None:
        await self.guard.call("seatmap.put", self.guard.client.set(
            cache_key(showtime_id), orjson.dumps(seat_map), px=self.ttl_ms))

    async def invalidate(self, showtime_id: int) -> None:
        await self._drops.add(showtime_id, None)

    async def _drop(self, showtime_id: int, _: list[None]) -> None:
        await self.guard.call("seatmap.invalidate", self.guard.client.delete(cache_key(showtime_id)))
