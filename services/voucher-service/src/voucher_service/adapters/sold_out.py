"""The per-process sold-out cache: a voucher found without uses is answered OUT_OF_STOCK for a moment without
asking its decision point again (the Redis gate in flash mode, the hot row in normal mode).

After a sell-out the crowd keeps coming, thousands of requests a second that all get the same answer; asking
the decision point for each costs it a script run or a statement on the hot row. A use given back elsewhere
(a release in another process) is seen once the entry lapses (`ttl`, SOLD_OUT_CACHE_SECONDS): until then
that use is not offered (an undersell of a moment), never one too many. A retry of an order that holds a use
must still be answered 201: the callers look that order up (batched) before trusting the cache.
"""

from __future__ import annotations

import time


class SoldOut:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._until: dict[str, float] = {}

    def __contains__(self, code: str) -> bool:
        until = self._until.get(code)
        if until is None:
            return False
        if until < time.monotonic():
            del self._until[code]
            return False
        return True

    def mark(self, code: str) -> None:
        if self.ttl > 0:
            self._until[code] = time.monotonic() + self.ttl

    def forget(self, code: str) -> None:
        """A use came back in this process: offer it at once."""
        self._until.pop(code, None)
