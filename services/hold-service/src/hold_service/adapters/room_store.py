"""The waiting rooms in Postgres (sql/waiting_room.sql): the operator's configuration, the lease and the seed.

Every hold request asks whether its showtime's room is on, so each process keeps the answer for
WAITING_ROOM_CACHE_SECONDS (rooms that do not exist too): an operator's change reaches every process within
that time (and one query). The requests of one showtime that find the entry stale while it is being read
share that one query; while Postgres cannot answer, the last answer is kept (a room does not switch off
because Postgres blinked).
An admission step reads fresh facts every time (`facts`).
A room's state changes (the operator's, the automatic mode's opening and closing) are each one transaction
with a conditional write and the event that reports it (WaitingRoomOpened / WaitingRoomClosed, in the outbox):
however many processes decide at once, one changes the room and one event is written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime

import asyncpg
from ticketing import outbox
from ticketing.db import Queries, sql_dir
from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS
from ticketing.unit_of_work import Conn

import hold_service
from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.room_rush import OpenReason, enabled_after, mode_of
from hold_service.domain.waiting_room import RoomConfig, RoomFacts, to_ms
from hold_service.service_layer import events
from hold_service.service_layer.room_ports import RoomStore

Q = Queries.load(sql_dir(hold_service.__file__) / "waiting_room.sql")
logger = logging.getLogger(__name__)


def _config(row: asyncpg.Record) -> RoomConfig:
    return RoomConfig(showtime_id=row["showtime_id"], enabled=row["enabled"], active_limit=row["active_limit"],
                      opens_at=row["opens_at"], starts_at=row["starts_at"], cancelled=row["cancelled"],
                      mode=row["mode"], open_at_arrivals=row["open_at_arrivals"], open_at_active=row["open_at_active"],
                      changed_reason=row["changed_reason"], changed_at=row["changed_at"])


async def _announce(conn: Conn, config: RoomConfig) -> None:
    event = events.waiting_room_changed(config.showtime_id, config.enabled, config.changed_reason or "OPERATOR",
                                        config.active_limit)
    await outbox.append(conn, event)  # type: ignore[arg-type]


class PgRoomStore(RoomStore):
    def __init__(self, pool: asyncpg.Pool, cache_seconds: float) -> None:
        self.pool, self.cache_seconds = pool, cache_seconds
        self._cached: dict[int, tuple[RoomConfig | None, float]] = {}  # showtime -> (config, read at)
        self._loading: dict[int, asyncio.Future[RoomConfig | None]] = {}  # showtime -> the query under way
        # showtime -> this process's attempt to open it under way: the requests of a rush that all find the
        # room off share it (other processes' attempts find it on: the conditional write changes nothing).
        self._opening: dict[int, asyncio.Future[RoomConfig | None]] = {}

    async def configure(self, cmd: ConfigureRoom) -> tuple[RoomConfig, bool] | None:
        mode = mode_of(cmd.enabled, cmd.mode)
        async with self.pool.acquire() as conn, conn.transaction():
            was = bool(await conn.fetchval(Q.lock_room, cmd.showtime_id))  # no row: off
            row = await conn.fetchrow(Q.configure_room, cmd.showtime_id, mode, cmd.active_limit, cmd.opens_at,
                                      cmd.open_at_arrivals, cmd.open_at_active, "OPERATOR", enabled_after(mode, was))
            if row is None:
                return None
            config = _config(row)
            if config.enabled != was:
                await _announce(conn, config)
        self._remember(config)  # this process sees it at once
        return config, config.enabled != was

    async def open_automatically(self, showtime_id: int, reason: OpenReason, active_limit: int) -> RoomConfig | None:
        opening = self._opening.get(showtime_id)
        if opening is None:
            opening = self._opening[showtime_id] = asyncio.ensure_future(
                self._open(showtime_id, reason, active_limit))
            opening.add_done_callback(lambda done: self._opened(showtime_id, done))
        return await asyncio.shield(opening)

    async def _open(self, showtime_id: int, reason: OpenReason, active_limit: int) -> RoomConfig | None:
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(Q.open_room_automatically, showtime_id, reason, active_limit)
            if row is not None:
                await _announce(conn, _config(row))
        if row is None:
            self._cached.pop(showtime_id, None)  # another process opened it (or it cannot be): read it again
            return None
        config = _config(row)
        self._remember(config)
        return config

    def _opened(self, showtime_id: int, done: asyncio.Future[RoomConfig | None]) -> None:
        self._opening.pop(showtime_id, None)
        if not done.cancelled():
            done.exception()

    async def automatic_rooms(self, limit: int) -> list[RoomConfig]:
        async with self.pool.acquire() as conn:
            return [_config(row) for row in await conn.fetch(Q.open_automatic_rooms, limit)]

    async def note_quiet(self, showtime_id: int, quiet: bool) -> datetime | None:
        async with self.pool.acquire() as conn:
            since: datetime | None = await conn.fetchval(Q.note_room_quiet, showtime_id, quiet)
        return since

    async def close_automatically(self, showtime_id: int, after_seconds: float) -> RoomConfig | None:
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(Q.close_room_automatically, showtime_id, after_seconds)
            if row is None:
                return None
            config = _config(row)
            await _announce(conn, config)
        self._remember(config)
        return config

    async def rooms_on(self) -> int:
        async with self.pool.acquire() as conn:
            count: int = await conn.fetchval(Q.rooms_on)
        return count

    def _remember(self, config: RoomConfig) -> None:
        self._cached[config.showtime_id] = (config, time.monotonic())

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
                            opens_at=row["opens_at"], mode=row["mode"])
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
