"""Quotes per customer (VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE), counted in Redis (lua/quote_limit.lua).

A quote tells whether a code is live: the limit makes guessing codes as slow as the limit says, from one
account. Redis down or slow: the quote is refused (GateUnavailable, 503), not let through uncounted.
"""

from __future__ import annotations

import math
from pathlib import Path

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from ticketing.redis_client import RedisClient

from voucher_service.domain.errors import GateUnavailable
from voucher_service.service_layer.ports import QuoteLimit

WINDOW_MS = 60_000


class RedisQuoteLimit(QuoteLimit):
    def __init__(self, client: RedisClient, per_minute: int) -> None:
        self.per_minute = per_minute
        self.script = client.register_script((Path(__file__).parent / "lua" / "quote_limit.lua").read_text())

    async def retry_after(self, customer_id: int) -> int | None:
        try:
            wait_ms = await self.script(keys=[f"ratelimit:quotes:{{{customer_id}}}"], args=[self.per_minute, WINDOW_MS])
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise GateUnavailable(f"quotes cannot be counted now (Redis): {exc}") from exc
        return max(1, math.ceil(int(wait_ms) / 1000)) if wait_ms else None
