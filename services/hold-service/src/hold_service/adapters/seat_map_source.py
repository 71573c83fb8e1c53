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
        return None if row is None else seat_map_of(showtime_id, row)


def seat_map_of(showtime_id: int, row: asyncpg.Record) -> SeatMap:
    """The map of a `seat_map` row (sql/holds.sql)."""
    details = {"durationMinutes": row["duration_minutes"], "cinema": row["cinema"], "hall": row["hall"],
               "timeZone": row["time_zone"], "prices": orjson.loads(row["prices"])}
    if row["currency"] is not None:  # None: a showtime of the previous release, until the sweeper gives it one
        details["currency"] = row["currency"]
    return SeatMap(showtime_id, row["version"], {seat[0]: seat[1] for seat in row["seats"]}, row["title"],
                   row["starts_at"].isoformat().replace("+00:00", "Z"),
                   {seat[0]: (seat[2], seat[3], int(seat[4])) for seat in row["seats"]}, details)


def seat_map_body(seat_map: SeatMap) -> bytes:
    """`{"showtimeId", "title", "startsAt", "durationMinutes", "cinema", "hall", "timeZone", "prices", "currency",
    "version",
    "seats": [{"code", "status", "category", "row", "x"}]}`, seats in hall order (the seat map's public
    contract, docs/api)."""
    places = seat_map.places
    return orjson.dumps({"showtimeId": seat_map.showtime_id, "title": seat_map.title, "startsAt": seat_map.starts_at,
                         **seat_map.details, "version": seat_map.version,
                         "seats": [_seat(code, status, places.get(code)) for code, status in seat_map.seats.items()]})


def _seat(code: str, status: str, place: tuple[str, str, int] | None) -> dict[str, str | int]:
    if place is None:
        return {"code": code, "status": status}
    return {"code": code, "status": status, "category": place[0], "row": place[1], "x": place[2]}
