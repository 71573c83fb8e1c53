"""The seat-map versions, given after COMMIT: a process's numberer (sql/schema.sql number_seat_map_changes).

A change of a seat map (a hold, its release, a booking, a cancellation) is committed `pending`, without its
seatMapVersion, so that a hold does not keep its showtime's row locked, nor send a NOTIFY, up to its COMMIT.
A numberer gives the versions a moment later, in a short transaction of its own that also tells the API
processes' seat maps (NOTIFY) and wakes the relay, which publishes nothing at or after a pending row.

Every hold-service process that writes changes runs one: woken at once by its own holds (`kick`, from the
hold writer), and every `interval` for the rest (releases, bookings, the sweeper's work, and what a process
that died left). The numberings of all processes take one lock in turn; one that finds it taken leaves the
work to the holder, whose next round numbers what it did not see. Postgres down: the failure is logged once,
and every round tries again; nothing is lost, the changes wait in the outbox, committed.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg
from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS

from hold_service.adapters.repository import Q

logger = logging.getLogger(__name__)
NUMBERING_ERRORS: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, asyncpg.PostgresError)
BATCH = 1000  # changes numbered per transaction


class SeatMapNumberer:
    def __init__(self, pool: asyncpg.Pool, interval_seconds: float, timeout_seconds: float = 5.0) -> None:
        self.pool, self.interval, self.timeout = pool, interval_seconds, timeout_seconds
        self._wake = asyncio.Event()
        self._failing = False

    def kick(self) -> None:
        """Changes were just committed here: number them now."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval)
            except TimeoutError:
                pass
            self._wake.clear()
            await self.number()
        await self.number()  # what this process wrote last, before it ends (a rollout, a rollback)

    async def number(self) -> int:
        """Every pending change this round can number (0: none, another process holds the lock, or Postgres
        did not answer)."""
        done = 0
        try:
            while (n := await self.pool.fetchval(Q.number_seat_map_changes, BATCH, timeout=self.timeout)) > 0:
                done += n
                if n < BATCH:
                    break
        except NUMBERING_ERRORS as exc:
            if not self._failing:
                log_action(logger, "seatmap.numbering_failed", str(exc), level=logging.WARNING,
                           error=type(exc).__name__)
            self._failing = True
            return done
        if self._failing:
            log_action(logger, "seatmap.numbering_back")
            self._failing = False
        return done
