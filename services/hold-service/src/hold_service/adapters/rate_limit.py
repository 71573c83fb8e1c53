"""Hold rate limits, per customer and per client address, each one Lua call in Redis.

The per-customer one (lua/rate_limit.lua) replaced the `limits` library here: that did the same single
EVALSHA but through its own client, pool and wrappers, a noticeable share of a worker's CPU on the gate
path (docs/benchmarks.md).
Fails open: with Redis down the limit is not enforced (logged); the denial-of-inventory cap lives in
Postgres and still holds. The per-address limit (HOLD_RATE_LIMIT_PER_IP_PER_MINUTE) is here too; the route
finds the address (entrypoints/api/client_address.py). Every refusal is counted by the limit that made it
(`hold_rate_limited_total{limit}`): refusals by address while few by customer mean many customers behind one
address (a NAT, an office, a proxy not in TRUSTED_PROXIES), not one customer hammering.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from prometheus_client import Counter
from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript

logger = logging.getLogger(__name__)
WINDOW_MS = 60_000
REFUSED = Counter("hold_rate_limited_total", "Hold requests and queue joins refused, by the limit that refused them",
                  ["limit"])
for _limit in ("customer", "address"):
    REFUSED.labels(_limit)  # exported at 0 from the start: "none refused" reads as 0, not as missing


class RateLimiter:
    """The null limiter: admits everything (the gate-off and test configurations use Redis's)."""

    async def retry_after(self, customer_id: int) -> int | None:
        """None when admitted, else seconds to wait."""
        return None

    async def retry_after_address(self, address: str) -> int | None:
        """The same for a client address (HOLD_RATE_LIMIT_PER_IP_PER_MINUTE)."""
        return None


class RedisRateLimiter(RateLimiter):
    """Per customer: the moving window of rate_limit.lua (exact; its cost grows with the limit, 5 a minute).
    Per address: the sliding-window counter of address_rate_limit.lua, O(1) at any limit, since one address
    (a NAT, an office) may carry many customers and a high limit."""

    def __init__(self, guard: RedisGuard, per_minute: int, per_address_per_minute: int) -> None:
        self.guard, self.per_minute = guard, per_minute  # the guard: "Redis is down, skip it a moment"
        self.per_address_per_minute = per_address_per_minute
        self.script = LuaScript(guard.client, "rate_limit.lua")  # also pipelined by admission.py
        self.address_script = LuaScript(guard.client, "address_rate_limit.lua")  # so is this one

    def call(self, customer_id: int) -> tuple[list[str], list[Any]]:
        return [f"ratelimit:holds:{customer_id}"], [self.per_minute, WINDOW_MS]

    def address_call(self, address: str) -> tuple[list[str], list[Any]]:
        return [f"ratelimit:address:{{{address}}}"], [self.per_address_per_minute, WINDOW_MS]

    async def retry_after(self, customer_id: int) -> int | None:
        wait_ms = await self.guard.call("ratelimit.hit", self.script(*self.call(customer_id)))
        if not wait_ms:
            return None  # admitted, or Redis unavailable (fail open)
        return log_refusal(customer_id, int(wait_ms))

    async def retry_after_address(self, address: str) -> int | None:
        wait_ms = await self.guard.call("ratelimit.address", self.address_script(*self.address_call(address)))
        if not wait_ms:
            return None
        return log_refusal(address, int(wait_ms))


def count_refusal(who: int | str) -> None:
    """One refusal by the customer's limit (`who` an id) or the address's (`who` an address)."""
    REFUSED.labels("customer" if isinstance(who, int) else "address").inc()


def log_refusal(who: int | str, wait_ms: int) -> int:
    """The Retry-After in whole seconds (at least 1), logged and counted."""
    wait = max(1, math.ceil(wait_ms / 1000))
    count_refusal(who)
    if isinstance(who, int):
        log_action(logger, "hold.rate_limited", customer_id=who, retry_after=wait)
    else:
        log_action(logger, "hold.rate_limited", address=who, retry_after=wait)
    return wait
