"""The waiting rooms in Postgres (sql/waiting_room.sql): the operator's configuration, the lease and the seed.

Every hold request asks whether its showtime's room is on, so each process keeps the answer for
WAITING_ROOM_CACHE_SECONDS (rooms that do not exist too): an operator's change reaches every process within
that time (and one query). The requests of one showtime that find the entry stale while it is being read
share that one query; while Postgres cannot answer, the last answer is kept (a room does not switch off
because Postgres blinked).
An admission step reads fresh facts every time (`facts`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime

import asyncpg
from ticketing.db import Queries, sql_dir
from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS

import hold_service
from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.waiting_room import RoomConfig, RoomFacts, to_ms
from hold_service.service_layer.room_ports import RoomStore

Q = Queries.load(sql_dir(hold_service.__file__) / "waiting_room.sql")
logger = logging.getLogger(__name__)


def _config(row: asyncpg.Record) -> RoomConfig:
    return RoomConfig(showtime_id=row["showtime_id"], enabled=row["enabled"], active_limit=row["active_limit"],
                      opens_at=row["opens_at"], starts_at=row["starts_at"], cancelled=row["cancelled"])


class PgRoomStore(RoomStore):
    def __init__(self, pool: asyncpg.Pool, cache_seconds: float) -> None:
        self.pool, self.cache_seconds = pool, cache_seconds
        self._cached: dict[int, tuple[RoomConfig | None, float]] = {}  # showtime -> (config, read at)
        self._loading: dict[int, asyncio.Future[RoomConfig | None]] = {}  # showtime -> the query under way

    async def configure(self, cmd: ConfigureRoom) -> RoomConfig | None:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.configure_room, cmd.showtime_id, cmd.enabled, cmd.active_limit,
                                      cmd.opens_at)
        config = None if row is None else _config(row)
        if config is not None:
            self._cached[cmd.showtime_id] = (config, time.monotonic())  # this process sees it at once
        return config

    async def config(self, showtime_id: int) -> RoomConfig | None:
        hit = self._cached.get(showtime_id)
        if hit is not None and time.monotonic() - hit[1] < self.cache_seconds:
            return hit[0]
        loading = self._loading.get(showtime_id)
        if loading is None:
            loading = self._loading[showtime_id] = asyncio.ensure_future(self._load(showtime_id))
            loading.add_done_callback(lambda done: self._loaded(showtime_id, done))
        try:
            return await asyncio.shield(loading)  # a caller that goes away does not cancel the others' query
        except TRANSIENT_ERRORS as exc:
            if hit is None:
                raise
            log_action(logger, "room.config_stale", str(exc), level=logging.WARNING, showtime_id=showtime_id)
            return hit[0]

    async def _load(self, showtime_id: int) -> RoomConfig | None:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.get_room, showtime_id)
        config = None if row is None else _config(row)
        if len(self._cached) > 10_000:
            self._cached.clear()  # showtimes nobody asks about any more; the hot ones come back at once
        self._cached[showtime_id] = (config, time.monotonic())
        return config

    def _loaded(self, showtime_id: int, done: asyncio.Future[RoomConfig | None]) -> None:
        self._loading.pop(showtime_id, None)
        if not done.cancelled():
            done.exception()  # retrieved: no "never retrieved" warning when every caller left

    async def facts(self, showtime_id: int) -> RoomFacts | None:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.room_facts, showtime_id)
        if row is None:
            return None
        config = RoomConfig(showtime_id=showtime_id, enabled=row["enabled"], active_limit=row["active_limit"],
                            opens_at=row["opens_at"])
        return RoomFacts(config=config, lease_ms=to_ms(row["admitted_until"]), seed=row["shuffle_seed"],
                         available=row["available"], held=row["held"], holders=list(row["holders"]),
                         started=row["started"])

    async def extend_lease(self, showtime_id: int, seconds: float) -> int:
        async with self.pool.acquire() as conn:
            until: datetime | None = await conn.fetchval(Q.extend_room_lease, showtime_id, seconds)
        return to_ms(until)

    async def mark_started(self, showtime_id: int) -> None:
        async with self.pool.acquire() as conn:
            await conn.execute(Q.mark_room_started, showtime_id)

    async def fix_seed(self, showtime_id: int, seed: str) -> str:
        async with self.pool.acquire() as conn:
            fixed: str = await conn.fetchval(Q.fix_room_seed, showtime_id, seed)
        return fixed
