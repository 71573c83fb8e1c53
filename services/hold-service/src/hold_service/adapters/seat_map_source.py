"""Where a seat map is loaded whole: Postgres, at the version its statement sees."""

from __future__ import annotations

import abc

import asyncpg
import orjson

from hold_service.adapters.repository import Q
from hold_service.domain.seat_map import SeatMap


class SeatMapSource(abc.ABC):
    @abc.abstractmethod
    async def load(self, showtime_id: int) -> SeatMap | None:
        """The map at the newest committed version; None: no such showtime."""


class PgSeatMapSource(SeatMapSource):
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def load(self, showtime_id: int) -> SeatMap | None:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.seat_map, showtime_id)  # one statement: one snapshot, one version
        if row is None:
            return None
        return SeatMap(showtime_id, row["version"], {code: status for code, status in row["seats"]}, row["title"],
                       row["starts_at"].isoformat().replace("+00:00", "Z"))


def seat_map_body(seat_map: SeatMap) -> bytes:
    """`{"showtimeId", "title", "startsAt", "version", "seats": [{"code", "status"}]}`, seats in hall order
    (the seat map's public contract, docs/api)."""
    return orjson.dumps({"showtimeId": seat_map.showtime_id, "title": seat_map.title, "startsAt": seat_map.starts_at,
                         "version": seat_map.version,
                         "seats": [{"code": code, "status": status} for code, status in seat_map.seats.items()]})
