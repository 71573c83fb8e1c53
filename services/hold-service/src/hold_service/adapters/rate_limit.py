"""Hold rate limits, per customer and per client address: one Lua script each, sent by admission.py with the
seat gate's in one round trip.

Fails open: with Redis down the limits are not enforced (logged); the denial-of-inventory cap lives in
Postgres and still holds. The route finds the client's address (entrypoints/api/client_address.py).
"""

from __future__ import annotations

import logging
import math

from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import Call, LuaScript

logger = logging.getLogger(__name__)
WINDOW_MS = 60_000


class RateLimits:
    """Per customer: the moving window of rate_limit.lua (exact; its cost grows with the limit, 5 a minute).
    Per address: the sliding-window counter of address_rate_limit.lua, O(1) at any limit, since one address
    (a NAT, an office) may carry many customers and a high limit. Each answers the wait in ms (0: admitted)."""

    def __init__(self, guard: RedisGuard, per_minute: int, per_address_per_minute: int) -> None:
        self.per_minute, self.per_address_per_minute = per_minute, per_address_per_minute
        self.script = LuaScript(guard.client, "rate_limit.lua")
        self.address_script = LuaScript(guard.client, "address_rate_limit.lua")

    def customer(self, customer_id: int) -> Call:
        return self.script, [f"ratelimit:holds:{customer_id}"], [self.per_minute, WINDOW_MS]

    def address(self, address: str) -> Call:
        return self.address_script, [f"ratelimit:address:{{{address}}}"], [self.per_address_per_minute, WINDOW_MS]


def log_refusal(who: int | str, wait_ms: int) -> int:
    """The Retry-After in whole seconds (at least 1), logged."""
    wait = max(1, math.ceil(wait_ms / 1000))
    if isinstance(who, int):
        log_action(logger, "hold.rate_limited", customer_id=who, retry_after=wait)
    else:
        log_action(logger, "hold.rate_limited", address=who, retry_after=wait)
    return wait
