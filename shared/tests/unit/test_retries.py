"""The retry shapes the loops share (ticketing.retries): the backoff's figures, the sleep a stop cuts short, and
the attempts until stopped."""

from __future__ import annotations

import asyncio
import time

import pytest
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_fixed
from ticketing.retries import backoff, sleep_or_stop, until_stopped


def test_the_backoff_doubles_from_its_first_wait_up_to_its_cap() -> None:
    wait, state = backoff(0.5, 10.0), RetryCallState(Retrying(), None, (), {})
    waits = []
    for attempt in range(1, 9):
        state.attempt_number = attempt
        waits.append(wait(state))
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


async def test_a_sleep_returns_as_soon_as_the_stop_is_set() -> None:
    stop = asyncio.Event()
    assert await sleep_or_stop(stop, 0.01) is False
    asyncio.get_running_loop().call_later(0.05, stop.set)
    started = time.monotonic()
    assert await sleep_or_stop(stop, 30.0) is True
    assert time.monotonic() - started < 5.0


async def attempts(stop: asyncio.Event, failures: list[BaseException], wait: float = 0.001,
                   ) -> tuple[int, list[str]]:
    """Runs a block that raises `failures` in turn, then succeeds; returns its attempts and the failures seen."""
    tried, seen = 0, []

    def after(state: RetryCallState) -> None:
        seen.append(type(state.outcome.exception() if state.outcome else None).__name__)

    async for attempt in until_stopped(stop, retry=retry_if_exception_type(OSError), wait=wait_fixed(wait),
                                       after=after):
        with attempt:
            tried += 1
            if failures:
                raise failures.pop(0)
    return tried, seen


async def test_a_failure_worth_another_attempt_is_retried_until_the_block_succeeds() -> None:
    tried, seen = await attempts(asyncio.Event(), [ConnectionRefusedError(), TimeoutError()])
    assert (tried, seen) == (3, ["ConnectionRefusedError", "TimeoutError"])


async def test_a_failure_not_worth_another_attempt_is_raised() -> None:
    with pytest.raises(ValueError, match="bad data"):
        await attempts(asyncio.Event(), [ConnectionRefusedError(), ValueError("bad data")])


async def test_no_attempt_starts_once_stopped() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await attempts(stop, []) == (0, [])


async def test_a_stop_during_the_wait_ends_the_loop_at_once_and_quietly() -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    started = time.monotonic()
    assert await attempts(stop, [ConnectionRefusedError()] * 3, wait=30.0) == (1, ["ConnectionRefusedError"])
    assert time.monotonic() - started < 5.0


async def test_a_failure_met_once_stopped_ends_the_loop_quietly() -> None:
    stop = asyncio.Event()
    tried, seen = 0, []
    async for attempt in until_stopped(stop, retry=retry_if_exception_type(OSError), wait=wait_fixed(30.0),
                                       after=lambda state: seen.append(state.attempt_number)):
        with attempt:
            tried += 1
            stop.set()  # the process is asked to leave while the attempt fails
            raise ConnectionResetError
    assert (tried, seen) == (1, [1])
