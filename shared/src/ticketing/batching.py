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

Few turns of the loop between a call and its answer: under load one turn serves every socket that is
ready, and each hop through the loop costs a request one such turn (an admitted hold makes two batched
calls, so its latency counts them; docs/benchmarks.md, "Figures behind the code"). The flush
task is made by the first `add` of a batch and starts on the next turn (by then that turn's other
calls have joined), and it hands each caller its own result directly: one hop in, one hop out.
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
        # per key, the batch still taking items: the items and each caller's future
        self._open: dict[K, tuple[list[V], list[asyncio.Future[R | None]]]] = {}
        self._running: set[K] = set()  # keys with a flush made or under way (serial only)
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks

    async def add(self, key: K, item: V) -> R | None:
        """`item`'s result once the flush holding it is done (None if flush returned None); raises what
        that flush raised. A caller that is cancelled leaves the flush to the others."""
        return await self._join(key, item)

    def post(self, key: K, item: V) -> None:
        """`add` without waiting: the item joins the open batch and nobody awaits its flush (a write whose
        outcome the caller need not hold a request for). The flush should handle its own errors: one it
        raises is only retrieved here, so that asyncio does not report it as never retrieved."""
        self._join(key, item).add_done_callback(_retrieved)

    def _join(self, key: K, item: V) -> asyncio.Future[R | None]:
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = ([], [])
            if key not in self._running:
                self._start(key)  # else the running flush starts it when it ends
        future: asyncio.Future[R | None] = asyncio.get_running_loop().create_future()
        batch[0].append(item)
        batch[1].append(future)
        return future

    def _start(self, key: K) -> None:
        task = asyncio.get_running_loop().create_task(self._run(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._serial:
            self._running.add(key)

    async def _run(self, key: K) -> None:
        items, futures = self._open.pop(key)  # a turn after the first add: that turn's adds are in
        try:
            results = await self._flush(key, items)
            if results is not None and len(results) != len(items):
                raise RuntimeError(f"a flush of {len(items)} items returned {len(results)} results")
        except Exception as exc:
            for future in futures:
                if not future.done():  # done: its caller was cancelled
                    future.set_exception(exc)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        else:
            for index, future in enumerate(futures):
                if not future.done():
                    future.set_result(None if results is None else results[index])
        finally:
            if self._serial:
                self._running.discard(key)
                if key in self._open:
                    self._start(key)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
