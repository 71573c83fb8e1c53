"""TickBatcher: what is added during one loop turn is flushed once, per key, and every caller awaits it."""

from __future__ import annotations

import asyncio

import pytest
from ticketing.batching import TickBatcher


async def test_one_flush_per_key_per_turn_and_callers_wait_for_it() -> None:
    flushed: list[tuple[str, list[int]]] = []

    async def flush(key: str, items: list[int]) -> None:
        await asyncio.sleep(0.01)
        flushed.append((key, items))

    batcher: TickBatcher[str, int, None] = TickBatcher(flush)
    await asyncio.gather(*(batcher.add("a" if i % 2 else "b", i) for i in range(10)))
    assert sorted(flushed) == [("a", [1, 3, 5, 7, 9]), ("b", [0, 2, 4, 6, 8])]  # all done on return
    await batcher.add("a", 42)  # a later turn: a batch of its own
    assert flushed[-1] == ("a", [42])


async def test_every_caller_sees_the_flush_error() -> None:
    async def flush(key: str, items: list[int]) -> None:
        raise ConnectionError("redis is down")

    batcher: TickBatcher[str, int, None] = TickBatcher(flush)
    outcomes = await asyncio.gather(*(batcher.add("k", i) for i in range(3)), return_exceptions=True)
    assert [type(o) for o in outcomes] == [ConnectionError] * 3


async def test_a_cancelled_caller_does_not_cancel_the_others() -> None:
    gate = asyncio.Event()
    flushed: list[list[int]] = []

    async def flush(key: str, items: list[int]) -> None:
        await gate.wait()
        flushed.append(items)

    batcher: TickBatcher[str, int, None] = TickBatcher(flush)
    first, second = asyncio.create_task(batcher.add("k", 1)), asyncio.create_task(batcher.add("k", 2))
    await asyncio.sleep(0.01)
    first.cancel()
    gate.set()
    await second
    with pytest.raises(asyncio.CancelledError):
        await first
    assert flushed == [[1, 2]]


async def test_a_posted_item_joins_the_turns_flush_and_nobody_waits_for_it(
        caplog: pytest.LogCaptureFixture) -> None:
    flushed: list[list[int]] = []

    async def flush(key: str, items: list[int]) -> None:
        flushed.append(items)
        if 0 in items:
            raise ConnectionError("redis is down")

    batcher: TickBatcher[str, int, None] = TickBatcher(flush, serial=True)
    batcher.post("k", 1)  # returns at once: no flush has run yet
    assert flushed == []
    await batcher.add("k", 2)
    assert flushed == [[1, 2]]
    batcher.post("k", 0)  # its flush fails: retrieved, not reported as an error never retrieved
    await asyncio.sleep(0.01)
    assert flushed[-1] == [0] and "never retrieved" not in caplog.text


async def test_each_caller_gets_its_own_items_result() -> None:
    runs: list[list[int]] = []

    async def flush(key: str, items: list[int]) -> list[int]:
        runs.append(items)
        return [i * 10 for i in items]

    batcher: TickBatcher[str, int, int] = TickBatcher(flush)
    assert await asyncio.gather(*(batcher.add("k", i) for i in range(5))) == [0, 10, 20, 30, 40]
    assert runs == [[0, 1, 2, 3, 4]]


@pytest.mark.parametrize("serial", [True, False])
async def test_serial_runs_one_flush_per_key_at_a_time_and_the_next_takes_all_that_waited(serial: bool) -> None:
    running, most, flushed = 0, 0, []
    release = asyncio.Event()

    async def flush(key: str, items: list[int]) -> list[int]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        flushed.append(items)
        return [i * 10 for i in items]

    batcher: TickBatcher[str, int, int] = TickBatcher(flush, serial=serial)
    first = asyncio.create_task(batcher.add("k", 1))
    await asyncio.sleep(0.01)  # the first flush is under way
    later = [asyncio.create_task(batcher.add("k", i)) for i in (2, 3)]
    await asyncio.sleep(0.01)
    latest = asyncio.create_task(batcher.add("k", 4))  # a later turn, still while the first runs
    await asyncio.sleep(0.01)
    release.set()
    assert await asyncio.gather(first, *later, latest) == [10, 20, 30, 40]
    if serial:
        assert most == 1 and flushed == [[1], [2, 3, 4]]
    else:
        assert most == 3 and sorted(flushed) == [[1], [2, 3], [4]]


async def test_a_flush_starts_on_the_next_turn_and_its_callers_resume_on_the_turn_after_it_returns() -> None:
    """Under load a turn of the loop is milliseconds of other requests' work: a call through the batcher
    must cost one turn in and one turn out, no more (the hold path makes two such calls)."""
    loop, turns, ticking = asyncio.get_running_loop(), 0, True

    def tick() -> None:  # runs once per turn of the loop
        nonlocal turns
        turns += 1
        if ticking:
            loop.call_soon(tick)

    loop.call_soon(tick)
    await asyncio.sleep(0)
    marks: dict[str, int] = {}

    async def flush(key: str, items: list[int]) -> list[int]:
        marks["started"] = turns
        return items

    batcher: TickBatcher[str, int, int] = TickBatcher(flush)
    added = turns
    assert await batcher.add("k", 7) == 7
    answered, ticking = turns, False
    assert marks["started"] - added <= 1
    assert answered - marks["started"] <= 1
