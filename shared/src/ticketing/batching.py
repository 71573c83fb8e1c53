"""Join the same small write from many requests that resume together into one call.

Under load, requests resume in bursts: a Kafka batch's acknowledgements, a wave of holds committing
together. When each then sends its own tiny Redis write (mark an order sent, drop a cached seat map),
the client's per-call cost adds up; sent together they cost one call. `TickBatcher` collects the items
added during one turn of the event loop, per key, and runs `flush(key, items)` once for them all;
every caller awaits that one flush and sees its outcome (its exception too), so the semantics of
"awaited before answering" are kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TickBatcher(Generic[K, V]):
    def __init__(self, flush: Callable[[K, list[V]], Awaitable[object]]) -> None:
        self._flush = flush
        self._open: dict[K, tuple[list[V], asyncio.Future[None]]] = {}

    async def add(self, key: K, item: V) -> None:
        """Returns when the flush holding `item` is done; raises what that flush raised."""
        batch = self._open.get(key)
        if batch is None:
            loop = asyncio.get_running_loop()
            batch = self._open[key] = ([], loop.create_future())
            batch[1].add_done_callback(_retrieve)  # no "never retrieved" warning if every waiter left
            loop.call_soon(self._start, key)
        batch[0].append(item)
        await asyncio.shield(batch[1])

    def _start(self, key: K) -> None:
        items, done = self._open.pop(key)
        task = asyncio.get_running_loop().create_task(self._run(key, items))
        task.add_done_callback(lambda t: _settle(done, t))

    async def _run(self, key: K, items: list[V]) -> None:
        await self._flush(key, items)


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[None], task: asyncio.Task[None]) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif (exc := task.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(None)
