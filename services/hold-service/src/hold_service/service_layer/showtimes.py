"""Showtimes and their seat map."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hold_service.adapters.repository import HoldRepository
from hold_service.domain.errors import ShowtimeExists, ShowtimeNotFound
from hold_service.domain.model import seat_codes
from hold_service.service_layer.ports import Ports


async def create_showtime(showtime_id: int, title: str, starts_at: datetime, price_cents: int,
                          rows: dict[str, int], ports: Ports) -> int:
    seats = seat_codes(rows)
    async with ports.uow() as uow:
        if not await uow.holds.add_showtime(showtime_id, title, starts_at, price_cents, seats):
            raise ShowtimeExists(f"showtime {showtime_id} exists")
        await uow.commit()
    return len(seats)


async def seat_map(showtime_id: int, ports: Ports) -> dict[str, Any]:
    """From the cache when present (<= seat_map_cache_seconds stale), else Postgres, then cached."""
    cached = await ports.cache.get(showtime_id)
    if cached is not None:
        return cached
    async with ports.pool.acquire() as conn:
        fresh = await HoldRepository(conn).seat_map(showtime_id)
    if fresh is None:
        raise ShowtimeNotFound(f"showtime {showtime_id}")
    await ports.cache.put(showtime_id, fresh)
    return fresh
