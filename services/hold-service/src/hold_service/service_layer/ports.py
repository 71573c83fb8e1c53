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

    def uow(self, lock_customer: tuple[int, int] | None = None) -> UnitOfWork:
        """`lock_customer` (customer, showtime): the transaction first takes that customer's advisory lock."""
        return self.uow_factory(lock_customer) if lock_customer else self.uow_factory()
