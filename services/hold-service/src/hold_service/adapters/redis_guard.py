"""Redis is an accelerator here, never the source of truth: every call goes through this guard.

A failing call is logged and reported as None; after a failure Redis is skipped for a short while so
a dead Redis costs one socket timeout now and then, not one per request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

from redis.exceptions import RedisError, SlotNotCoveredError
from ticketing.logs import log_action
from ticketing.redis_client import RedisClient

logger = logging.getLogger(__name__)
T = TypeVar("T")


class RedisGuard:
    def __init__(self, client: RedisClient, retry_after: float) -> None:
        self.client = client
        self.retry_after = retry_after
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def call(self, what: str, pending: Awaitable[T]) -> T | None:
        if not self.available:
            _close(pending)
            return None
        try:
            return await pending
        except (RedisError, SlotNotCoveredError, OSError) as exc:  # a Redis Cluster failing over too
            self._down_until = time.monotonic() + self.retry_after
            log_action(logger, "redis.skipped", str(exc), level=logging.WARNING, call=what,
                       error=type(exc).__name__)
            return None


def _close(pending: Awaitable[object]) -> None:
    close = getattr(pending, "close", None)
    if close is not None:
        close()  # an un-awaited coroutine; closing it avoids a "never awaited" warning
