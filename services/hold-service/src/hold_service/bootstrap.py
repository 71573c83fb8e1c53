"""The one composition root: settings in, wired ports out (tests pass their own settings or fakes)."""

from __future__ import annotations

import asyncpg
from ticketing.db import create_pool

from hold_service.adapters.admission import Admission, RedisAdmission
from hold_service.adapters.rate_limit import RedisRateLimiter
from hold_service.adapters.redis_guard import RedisGuard, redis_client
from hold_service.adapters.seat_gate import RedisSeatGate, SeatGate
from hold_service.adapters.seat_map_cache import RedisSeatMapCache
from hold_service.config import HoldSettings
from hold_service.service_layer.hold_writer import HoldWriter
from hold_service.service_layer.ports import Ports
from hold_service.service_layer.unit_of_work import UnitOfWork


async def bootstrap(settings: HoldSettings, pool: asyncpg.Pool | None = None) -> Ports:
    pool = pool or await create_pool(settings.database_url, min_size=settings.db_pool_min,
                                     max_size=settings.db_pool_max,
                                     command_timeout=settings.dependency_timeout_seconds * 5)
    guard = RedisGuard(redis_client(settings.redis_url, settings.redis_socket_timeout_seconds),
                       settings.redis_retry_after_seconds)
    limiter = RedisRateLimiter(guard, settings.hold_rate_limit_per_minute)
    gate: SeatGate
    if settings.seat_gate_enabled:
        gate = redis_gate = RedisSeatGate(guard)
        admission: Admission = RedisAdmission(guard, limiter, redis_gate)  # both in one round trip
    else:
        gate = SeatGate()
        admission = Admission(limiter, gate)
    def uow(transaction: bool = True) -> UnitOfWork:
        return UnitOfWork(pool, transaction)

    return Ports(settings=settings, pool=pool, gate=gate,
                 cache=RedisSeatMapCache(guard, settings.seat_map_cache_seconds), limiter=limiter,
                 admission=admission, redis=guard.client, uow_factory=uow,
                 writer=HoldWriter(uow, batched=settings.seat_gate_enabled))


async def shutdown(ports: Ports) -> None:
    await ports.redis.aclose()
    await ports.pool.close()
