"""The clients streaming a seat map, and the Server-Sent Events bytes they are sent.

Each change is framed once per process (`change_frame`) and the same bytes are queued to every
subscriber of its showtime: fanning out costs one append and, for a subscriber waiting, one wake-up.
A subscriber holds at most `limit` bytes not yet handed to its connection; past that it has fallen
behind (its connection does not drain) and is closed: it never holds more memory than that, and its
client (EventSource) reconnects and starts again from a fresh snapshot. A write that does not finish for
`send_timeout` seconds closes it as well (a client that stopped reading while nothing changed).
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable

import orjson

from hold_service.domain.seat_map import SeatChange
from hold_service.service_layer.seat_map_ports import SeatMapSubscription, SeatMapView

HEARTBEAT = b": heartbeat\n\n"
WRITE_BYTES = 64 * 1024  # frames joined into one write up to this: what a dropped connection may keep in flight
RETRY_MS = (1000, 3000)  # EventSource reconnect delay, spread so that a reset does not come back at once


def change_frame(change: SeatChange) -> bytes:
    data = orjson.dumps({"version": change.version,
                         "seats": [{"code": code, "status": change.status} for code in change.seats]})
    return b"event: change\nid: %d\ndata: %s\n\n" % (change.version, data)


def snapshot_frame(view: SeatMapView) -> bytes:
    return b"retry: %d\nevent: snapshot\nid: %d\ndata: %s\n\n" % (random.randint(*RETRY_MS), view.version,
                                                                     view.body)


class Subscriber(SeatMapSubscription):
    __slots__ = ("address", "closed", "frames", "lease", "limit", "on_close", "sending_since", "showtime_id", "size",
                 "snapshot", "task", "waiter")

    def __init__(self, showtime_id: int, snapshot: SeatMapView, limit: int,
                 on_close: Callable[[Subscriber], None], address: str = "", lease: str = "") -> None:
        self.showtime_id, self.limit, self.on_close = showtime_id, limit, on_close
        self.snapshot: SeatMapView | None = snapshot  # until it is taken to be sent
        self.address, self.lease = address, lease  # the client's, and its stream lease (stream_leases.py)
        self.frames: deque[bytes] = deque()
        self.size = 0
        self.closed: str | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.sending_since = 0.0  # loop time a write began; 0: not writing
        self.task = asyncio.current_task()  # the request's task: cancelled to end a write that hangs

    def take_snapshot(self) -> SeatMapView:
        snapshot, self.snapshot = self.snapshot, None
        if snapshot is None:
            raise RuntimeError("the snapshot was taken already")
        return snapshot

    def push(self, frame: bytes, wake: bool = True) -> None:
        """`wake=False`: queued only, sent at the next `wake()` (changes that come close together go in one write)."""
        if self.closed:
            return
        self.size += len(frame)
        if self.size > self.limit:
            self.close("slow")
            return
        self.frames.append(frame)
        if wake:
            self.wake()

    async def next(self) -> bytes | None:
        while not self.frames and not self.closed:
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        if self.closed:
            return None
        out = [self.frames.popleft()]
        written = len(out[0])
        while self.frames and written + len(self.frames[0]) <= WRITE_BYTES:
            written += len(self.frames[0])
            out.append(self.frames.popleft())
        self.size -= written
        return out[0] if len(out) == 1 else b"".join(out)

    def sending(self, started: bool) -> None:
        self.sending_since = asyncio.get_running_loop().time() if started else 0.0

    def stuck(self, now: float, send_timeout: float) -> bool:
        return bool(self.sending_since) and now - self.sending_since > send_timeout

    def close(self, reason: str) -> None:
        """Frees what it holds at once. A write in progress is to a client that does not read (or to one
        that left, which the server notices itself): it is interrupted, which closes the connection."""
        if self.closed:
            return
        self.closed = reason
        self.frames.clear()
        self.size, self.snapshot = 0, None
        self.on_close(self)
        if self.sending_since and reason != "gone" and self.task is not None:
            self.task.cancel()
        else:
            self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
