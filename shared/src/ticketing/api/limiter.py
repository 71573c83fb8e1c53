"""The count of requests in flight in one API process, by priority, and a short queue for a slot (the shedder's
state: shedding.py says why it is built so). One event loop per process: a plain integer, no lock."""

from __future__ import annotations

import asyncio
from collections import deque
from enum import IntEnum


class Priority(IntEnum):
    """Lower is shed first."""

    BROWSE = 0  # reads a customer repeats: seat maps, the catalogue, queue polls
    HOLD = 1  # taking seats; a route with no declared priority
    PAY = 2  # gateway callbacks, checkouts, hold extensions, a checkout's voucher reservation
    NEVER = 3  # health, readiness, metrics, streams: never counted nor shed


# The share of the limit each priority may fill, in percent (NEVER is not counted).
SHARES = {Priority.BROWSE: 50, Priority.HOLD: 75, Priority.PAY: 100}


class Limiter:
    """Requests in flight in one process, and the waiters for a slot, one queue per priority."""

    def __init__(self, max_in_flight: int, queue_timeout_ms: float = 0.0) -> None:
        self.limit = max_in_flight
        self.caps = [max(1, max_in_flight * SHARES[p] // 100) for p in sorted(SHARES)]
        self.queue_timeout = queue_timeout_ms / 1000
        self.in_flight = self.peak = 0
        self.waiters: list[deque[asyncio.Future[bool]]] = [deque() for _ in self.caps]
        self.waiting = 0  # futures in the queues, the expired and cancelled ones included until popped

    def try_acquire(self, priority: int) -> bool:
        if self.in_flight < self.caps[priority]:
            self.in_flight += 1
            if self.in_flight > self.peak:
                self.peak = self.in_flight
            return True
        return False

    async def acquire(self, priority: int) -> bool:
        """A slot, now or within the queue timeout; False: shed it."""
        if self.try_acquire(priority):
            return True
        if not self.queue_timeout or self.waiting >= self.limit:
            return False  # a flood, not a burst: queueing it would cost each refusal a timer and its wait
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self.waiters[priority].append(waiter)
        self.waiting += 1
        timer = loop.call_later(self.queue_timeout, _expire, waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            # The client left (the task is cancelled) just after a release handed this waiter its slot.
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.release()
            raise
        finally:
            timer.cancel()

    def release(self) -> None:
        """The slot goes to the most important waiter whose share it fits, else back to the pool."""
        if self.waiting:
            for priority in range(len(self.caps) - 1, -1, -1):
                if self._hand_over(priority):
                    return
        self.in_flight -= 1

    def _hand_over(self, priority: int) -> bool:
        queue = self.waiters[priority]
        if not queue or self.in_flight > self.caps[priority]:
            return False
        while queue:
            waiter = queue.popleft()
            self.waiting -= 1
            if not waiter.done():
                waiter.set_result(True)  # in_flight stays: the slot passes on
                return True
        return False

    def sample_peak(self) -> int:
        """The highest in flight since the last sample."""
        peak, self.peak = self.peak, self.in_flight
        return peak


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
