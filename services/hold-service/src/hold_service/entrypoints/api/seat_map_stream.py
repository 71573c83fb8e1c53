"""`GET /showtimes/{id}/seats/stream`: Server-Sent Events written straight to the ASGI connection.

One coroutine per client and one that waits for it to leave; no task group or memory channel per
stream (FastAPI's EventSourceResponse runs four tasks per stream), so thousands of idle streams per
process cost little more than their connections (docs/benchmarks.md has the figures).

How a stream ends:
- the client leaves: uvicorn answers `receive()` with http.disconnect;
- its subscription is closed (a reset, fell behind, shutdown): idle, the response ends cleanly and
  EventSource reconnects to a fresh snapshot; stuck in a write to a client that does not read, the task
  is cancelled there and StreamDropped makes uvicorn close the connection. uvicorn logs that as
  "Exception in ASGI application"; `quiet_dropped_streams` filters it, the drop is logged here.
- shutdown: uvicorn waits for open responses before it ends the lifespan, and a stream does not end by
  itself, so SIGTERM/SIGINT close every stream first (`end_streams_on_signal`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from fastapi.responses import Response
from starlette.types import Message, Receive, Scope, Send
from ticketing.logs import log_action

from hold_service.adapters.seat_map_subscribers import snapshot_frame
from hold_service.service_layer.seat_map_ports import SeatMapSubscription

logger = logging.getLogger(__name__)
HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
           (b"x-accel-buffering", b"no")]  # proxies (nginx) must not buffer it
LAST_WRITE_SECONDS = 1.0


class StreamDropped(BaseException):
    """Not an error: how a stream to a client that stopped reading ends. A BaseException, so that no
    exception handler turns it into a response; uvicorn then closes the connection."""


class SeatMapStream(Response):
    media_type = "text/event-stream"

    def __init__(self, subscription: SeatMapSubscription, showtime_id: int) -> None:
        super().__init__()
        self.subscription, self.showtime_id = subscription, showtime_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sub = self.subscription
        watcher = asyncio.ensure_future(_until_gone(receive, sub))
        try:
            await self._write(send, {"type": "http.response.start", "status": 200, "headers": HEADERS})
            # Taken from the subscription and not kept in a local while the stream waits: an idle stream would
            # hold its snapshot (~10 KB), and with it a seat map long gone from the cache.
            await self._write(send, _chunk(snapshot_frame(sub.take_snapshot())))
            while (frames := await sub.next()) is not None:
                await self._write(send, _chunk(frames))
                del frames
            if sub.closed not in ("gone", "shutdown"):
                log_action(logger, "seatmap.stream_ended", reason=sub.closed, showtime_id=self.showtime_id)
            last = send({"type": "http.response.body", "body": b"", "more_body": False})
            await asyncio.wait_for(last, LAST_WRITE_SECONDS)
        except (asyncio.CancelledError, TimeoutError):
            if sub.closed in (None, "gone"):
                raise  # a real cancellation (the server is stopping its tasks)
            log_action(logger, "seatmap.stream_dropped", level=logging.INFO, reason=sub.closed,
                       showtime_id=self.showtime_id)
            raise StreamDropped(sub.closed) from None
        finally:
            watcher.cancel()
            sub.close("gone")

    async def _write(self, send: Send, message: Message) -> None:
        self.subscription.sending(True)
        try:
            await send(message)
        finally:
            self.subscription.sending(False)


def _chunk(frames: bytes) -> Message:
    return {"type": "http.response.body", "body": frames, "more_body": True}


async def _until_gone(receive: Receive, sub: SeatMapSubscription) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    sub.close("gone")


class _DroppedStreams(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], StreamDropped))


def quiet_dropped_streams() -> None:
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DroppedStreams) for f in errors.filters):
        errors.addFilter(_DroppedStreams())


def end_streams_on_signal(close_streams: Callable[[str], None]) -> Callable[[], None]:
    """Chain onto the process' SIGTERM/SIGINT handlers (uvicorn's); returns what puts them back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop, chained = asyncio.get_running_loop(), {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            loop.call_soon_threadsafe(close_streams, "shutdown")  # safe from a signal handler
            previous(signum, frame)

        signal.signal(sig, handler)
        chained[sig] = (handler, previous)

    def restore() -> None:
        for sig, (handler, previous) in chained.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, previous)
    return restore
