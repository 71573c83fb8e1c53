"""Showtimes and their seat map."""

from __future__ import annotations

from typing import Any

from hold_service.domain.commands import CreateShowtime
from hold_service.domain.errors import ShowtimeExists, ShowtimeNotFound
from hold_service.domain.model import seat_codes
from hold_service.service_layer.ports import Deps


async def create_showtime(cmd: CreateShowtime, deps: Deps) -> int:
    """Returns the number of seats created."""
    seats = seat_codes(cmd.rows)
    async with deps.uow() as uow:
        if not await uow.holds.add_showtime(cmd.showtime_id, cmd.title, cmd.starts_at, cmd.price_cents, seats):
            raise ShowtimeExists(f"showtime {cmd.showtime_id} exists")
        await uow.commit()
    return len(seats)


async def seat_map(showtime_id: int, deps: Deps) -> dict[str, Any]:
    found = await deps.seat_maps.get(showtime_id)
    if found is None:
        raise ShowtimeNotFound(f"showtime {showtime_id}")
    return found
