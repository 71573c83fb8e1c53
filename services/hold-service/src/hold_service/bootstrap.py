"""The one composition root: settings in, `Deps` out (tests build Deps from fakes the same way)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import asyncpg
from ticketing.db import create_pool
from ticketing.redis_client import RedisClient, redis_client

from hold_service.adapters.admission import RateLimits, RedisAdmission
from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.repository import PgHoldsUnitOfWork
from hold_service.adapters.room_credentials import SignedCredentials
from hold_service.adapters.room_queue import RedisRoomQueue
from hold_service.adapters.room_store import PgRoomStore
from hold_service.adapters.seat_gate import SeatGate
from hold_service.adapters.seat_map_feed import PgSeatMapFeed, maintain
from hold_service.adapters.seat_map_source import PgSeatMapSource
from hold_service.adapters.seat_map_versions import SeatMapNumberer
from hold_service.adapters.seat_maps import LiveSeatMaps
from hold_service.adapters.stream_leases import StreamLeases
from hold_service.adapters.writer import PostgresHoldWriter
from hold_service.config import HoldSettings
from hold_service.service_layer.ports import Deps


@dataclass
class Service:
    """The wired service: its `Deps`, and the connections the process closes at the end."""

    deps: Deps
    pool: asyncpg.Pool
    redis: RedisClient
    seat_maps: LiveSeatMaps
    seat_map_feed: PgSeatMapFeed
    numberer: SeatMapNumberer
    room_redis: RedisClient | None = None  # the waiting room's own client
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def follow_seat_changes(self, wait_seconds: float = 5.0) -> None:
        """API processes: the seat-map feed (one LISTEN) and the maps' clock run until close(). Waits for the
        first LISTEN (streams are refused without it); Postgres down at startup: the feed keeps trying."""
        settings = self.deps.settings
        self._tasks += [asyncio.create_task(self.seat_map_feed.run(self._stop)),
                        asyncio.create_task(maintain(self.seat_maps, self._stop, settings.seat_map_heartbeat_seconds,
                                                     settings.seat_map_stream_send_timeout_seconds))]
        try:
            await asyncio.wait_for(self.seat_map_feed.listening.wait(), wait_seconds)
        except TimeoutError:
            pass

    def number_seat_changes(self) -> None:
        """Every process that writes seat-map changes: their versions, given after COMMIT, until close()."""
        self._tasks.append(asyncio.create_task(self.numberer.run(self._stop)))

    async def close(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.redis.aclose()
        if self.room_redis is not None:
            await self.room_redis.aclose()
        await self.pool.close()


# Every statement of hold-service runs with the plan Postgres makes once per connection for any parameters
# (the generic plan): planning a hold's statement at every run would hold the showtime's seats locked while
# it plans (docs/benchmarks.md has the figures). The statements are written for that plan: each finds rows
# by key and reads the rows of the step before, so a plan guessing ten rows per step stays right for three
# hundred (sql/holds.sql).
PLANS = {"plan_cache_mode": "force_generic_plan"}


async def bootstrap(settings: HoldSettings) -> Service:
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max,
                             command_timeout=settings.dependency_timeout_seconds * 5, server_settings=PLANS,
                             statement_cache_size=settings.db_statement_cache_size)
    guard = RedisGuard(redis_client(settings, settings.redis_socket_timeout_seconds),
                       settings.redis_retry_after_seconds)
    # The waiting room's own client and guard: its calls may take longer than a hold's, and a slow answer to
    # one of them does not make the other skip Redis.
    room_guard = RedisGuard(redis_client(settings, settings.waiting_room_redis_timeout_seconds),
                            settings.redis_retry_after_seconds)
    seat_maps = _seat_maps(settings, pool, guard)
    numberer = SeatMapNumberer(pool, settings.seat_map_numbering_seconds, settings.dependency_timeout_seconds)
    deps = Deps(settings=settings, uow=lambda: PgHoldsUnitOfWork(pool, on_commit=numberer.kick),
                statements=lambda: PgHoldsUnitOfWork(pool, transaction=False, on_commit=numberer.kick),
                writer=PostgresHoldWriter(pool, numberer.kick),
                admission=_admission(settings, guard), seat_maps=seat_maps,
                rooms=PgRoomStore(pool, settings.waiting_room_cache_seconds),
                queue=RedisRoomQueue(room_guard, settings.waiting_room_step_seconds,
                                     settings.waiting_room_abandon_seconds),
                credentials=SignedCredentials(settings.jwt_secret))
    return Service(deps=deps, pool=pool, redis=guard.client, seat_maps=seat_maps,
                   seat_map_feed=PgSeatMapFeed(settings.session_database_url, seat_maps), numberer=numberer,
                   room_redis=room_guard.client)


def _admission(settings: HoldSettings, guard: RedisGuard) -> RedisAdmission:
    """The rate limits and the seat gate in one round trip; SEAT_GATE_ENABLED=false: a gate that names no seat."""
    limits = RateLimits(guard, settings.hold_rate_limit_per_minute, settings.hold_rate_limit_per_ip_per_minute,
                        settings.waiting_room_anonymous_joins_per_ip_per_minute)
    return RedisAdmission(guard, limits, SeatGate(guard, enabled=settings.seat_gate_enabled))


def _seat_maps(settings: HoldSettings, pool: asyncpg.Pool, guard: RedisGuard) -> LiveSeatMaps:
    return LiveSeatMaps(PgSeatMapSource(pool), capacity=settings.seat_map_showtimes,
                        missing_seconds=settings.seat_map_missing_seconds,
                        stale_seconds=settings.seat_map_stale_seconds,
                        stream_buffer_bytes=settings.seat_map_stream_buffer_bytes,
                        max_streams=settings.seat_map_max_streams, flush_seconds=settings.seat_map_stream_flush_seconds,
                        leases=StreamLeases(guard, settings.seat_map_max_streams_per_address))
