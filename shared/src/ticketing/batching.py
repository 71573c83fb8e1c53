"""Join the same small call from many requests that arrive or resume together into one call.

Under load, requests come in bursts: the event loop reads many sockets per turn, a Kafka batch's
acknowledgements resume their requests at once, a wave of holds commits together. When each then
sends its own tiny call (reserve a flash use, mark an order sent, drop a cached seat map; write a
hold), the per-call cost (a syscall, the client's bookkeeping, a COMMIT) adds up; together they cost one.
`TickBatcher` collects the items added during one turn of the event loop, per key, and runs
`flush(key, items)` once for them all; every caller awaits that one flush and gets its own item's
result (flush returns one per item, in order, or None) or the flush's exception, so the semantics of
one awaited call per request are kept.

`serial=True` runs at most one flush per key at a time; what arrives meanwhile waits and goes in the
next flush, all of it (group commit: under load the batches grow instead of the flushes piling up
side by side, say transactions all waiting on the same row).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")


class TickBatcher(Generic[K, V, R]):
    def __init__(self, flush: Callable[[K, list[V]], Awaitable[Sequence[R] | None]], serial: bool = False) -> None:
        self._flush = flush
        self._serial = serial
        self._open: dict[K, tuple[list[V], asyncio.Future[Sequence[R] | None]]] = {}
        self._running: set[K] = set()  # keys with a flush under way (serial only)

    async def add(self, key: K, item: V) -> R | None:
        """`item`'s result once the flush holding it is done (None if flush returned None); raises what
        that flush raised."""
        batch = self._open.get(key)
        if batch is None:
            loop = asyncio.get_running_loop()
            batch = self._open[key] = ([], loop.create_future())
            batch[1].add_done_callback(_retrieve)  # no "never retrieved" warning if every waiter left
            if key not in self._running:
                loop.call_soon(self._start, key)  # else the running flush starts it when it ends
        index = len(batch[0])
        batch[0].append(item)
        results = await asyncio.shield(batch[1])
        return None if results is None else results[index]

    def _start(self, key: K) -> None:
        items, done = self._open.pop(key)
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._run(key, items))
        task.add_done_callback(lambda t: _settle(done, t))
        if self._serial:
            self._running.add(key)
            task.add_done_callback(lambda _: self._next(key))

    def _next(self, key: K) -> None:
        self._running.discard(key)
        if key in self._open:
            self._start(key)

    async def _run(self, key: K, items: list[V]) -> Sequence[R] | None:
        results = await self._flush(key, items)
        if results is not None and len(results) != len(items):
            raise RuntimeError(f"a flush of {len(items)} items returned {len(results)} results")
        return results


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[Any], task: asyncio.Task[Any]) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif (exc := task.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(task.result())
