"""Per-customer hold rate limit: a moving window in Redis, one Lua call (lua/rate_limit.lua).

It replaced the `limits` library here: that did the same single EVALSHA but through its own client,
pool and wrappers, a noticeable share of a worker's CPU on the gate path (README, Benchmarks).
Fails open: with Redis down the limit is not enforced (logged); the denial-of-inventory cap lives in
Postgres and still holds.
"""

from __future__ import annotations

import logging
import math

from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript

logger = logging.getLogger(__name__)
WINDOW_MS = 60_000


class RateLimiter:
    """The null limiter: admits everything (the gate-off and test configurations use Redis's)."""

    async def retry_after(self, customer_id: int) -> int | None:
        """None when admitted, else seconds to wait."""
        return None


class RedisRateLimiter(RateLimiter):
    def __init__(self, guard: RedisGuard, per_minute: int) -> None:
        self.guard, self.per_minute = guard, per_minute  # the guard: "Redis is down, skip it a moment"
        self.script = LuaScript(guard.client, "rate_limit.lua")  # also pipelined by admission.py

    async def retry_after(self, customer_id: int) -> int | None:
        wait_ms = await self.guard.call("ratelimit.hit", self.script(
            [f"ratelimit:holds:{customer_id}"], [self.per_minute, WINDOW_MS]))
        if not wait_ms:
            return None  # admitted, or Redis unavailable (fail open)
        return log_refusal(customer_id, int(wait_ms))


def log_refusal(customer_id: int, wait_ms: int) -> int:
    """The Retry-After in whole seconds (at least 1), logged."""
    wait = max(1, math.ceil(wait_ms / 1000))
    log_action(logger, "hold.rate_limited", customer_id=customer_id, retry_after=wait)
    return wait
