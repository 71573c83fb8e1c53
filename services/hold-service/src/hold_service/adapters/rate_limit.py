"""Per-customer hold rate limit (moving window in Redis, the `limits` library).

Fails open: with Redis down the limit is not enforced (logged); the denial-of-inventory cap lives in
Postgres and still holds.
"""

from __future__ import annotations

import logging
import math
import time

from limits import RateLimitItemPerMinute
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter
from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard

logger = logging.getLogger(__name__)


class RateLimiter:
    """Port; this base class admits everything."""

    async def retry_after(self, customer_id: int) -> int | None:
        """None when admitted, else seconds to wait."""
        return None


class RedisRateLimiter(RateLimiter):
    def __init__(self, redis_url: str, per_minute: int, guard: RedisGuard, timeout: float) -> None:
        self.item = RateLimitItemPerMinute(per_minute)
        self.guard = guard  # shares the "Redis is down, skip it for a moment" state
        storage = RedisStorage("async+" + redis_url, implementation="redispy",
                               socket_timeout=timeout, socket_connect_timeout=timeout)
        self.limiter = MovingWindowRateLimiter(storage)

    async def retry_after(self, customer_id: int) -> int | None:
        key = f"holds:{customer_id}"
        if await self.guard.call("ratelimit.hit", self.limiter.hit(self.item, key)) is not False:
            return None  # admitted, or Redis unavailable (fail open)
        stats = await self.guard.call("ratelimit.stats", self.limiter.get_window_stats(self.item, key))
        wait = 1 if stats is None else max(1, math.ceil(stats.reset_time - time.time()))
        log_action(logger, "hold.rate_limited", customer_id=customer_id, retry_after=wait)
        return wait
