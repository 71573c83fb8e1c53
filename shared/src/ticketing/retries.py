"""Retries through tenacity, in the shapes the platform's loops share.

- `backoff(first, cap)`: the wait after a failed attempt, `first` doubling after each failure up to `cap`;
- `sleep_or_stop(stop, seconds)`: a sleep that returns as soon as the process is asked to stop;
- `until_stopped(stop, ...)`: the attempts of a block for as long as its failures are worth another, until the
  process stops: a sleep returns early on the stop, no attempt starts once it is set, and a failure met once
  stopped ends the loop quietly (the process is leaving, not failing). A failure not worth another is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from tenacity import AsyncRetrying, AttemptManager, RetryCallState, wait_exponential
from tenacity.retry import retry_base
from tenacity.wait import wait_base


def backoff(first: float, cap: float) -> wait_exponential:
    """`first` after the first failure, then 2 x first, 4 x first ... never more than `cap`."""
    return wait_exponential(multiplier=first, max=cap)


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep unless stopped; True when stopped."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
        return True
    except TimeoutError:
        return False


async def until_stopped(stop: asyncio.Event, *, retry: retry_base, wait: wait_base,
                        after: Callable[[RetryCallState], None] | None = None) -> AsyncIterator[AttemptManager]:
    """`async for attempt in until_stopped(...): with attempt: ...`; `after` is called with each failure worth
    another attempt (also the one that meets the stop)."""

    async def nap(seconds: float) -> None:
        await sleep_or_stop(stop, seconds)

    retrying = AsyncRetrying(retry=retry, wait=wait, stop=lambda _: stop.is_set(), sleep=nap,
                             after=after or (lambda _: None), retry_error_callback=lambda _: None)
    async for attempt in retrying:
        if stop.is_set():  # stopped during the sleep
            return
        yield attempt
