"""What the handlers need besides the unit of work; built once in bootstrap.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import redis.asyncio as aioredis

from hold_service.adapters.admission import Admission
from hold_service.adapters.rate_limit import RateLimiter
from hold_service.adapters.seat_gate import SeatGate
from hold_service.adapters.seat_map_cache import SeatMapCache
from hold_service.config import HoldSettings
from hold_service.service_layer.hold_writer import HoldWriter
from hold_service.service_layer.unit_of_work import UnitOfWork


@dataclass
class Ports:
    settings: HoldSettings
    pool: asyncpg.Pool
    gate: SeatGate
    cache: SeatMapCache
    limiter: RateLimiter
    admission: Admission
    uow_factory: Callable[..., UnitOfWork]
    redis: aioredis.Redis
    writer: HoldWriter  # writes admitted holds, batched per showtime per loop turn

    def uow(self) -> UnitOfWork:
        return self.uow_factory()
