"""One showtime's seat map in an API process: the map, its body for GET built once per version, and the
streams that follow it."""

from __future__ import annotations

import asyncio

from hold_service.adapters.seat_map_source import seat_map_body
from hold_service.adapters.seat_map_subscribers import HEARTBEAT, Subscriber, change_frame
from hold_service.domain.seat_map import SeatChange, SeatMap
from hold_service.service_layer.seat_map_ports import SeatMapView


class LiveMap:
    __slots__ = ("_view", "flush", "map", "subscribers")

    def __init__(self, seat_map: SeatMap) -> None:
        self.map, self.subscribers, self._view = seat_map, set[Subscriber](), SeatMapView(-1, b"")
        self.flush: asyncio.TimerHandle | None = None  # the wake-up of its streams, once per flush window

    def view(self) -> SeatMapView:
        if self._view.version != self.map.version:
            self._view = SeatMapView(self.map.version, seat_map_body(self.map))
        return self._view

    def publish(self, change: SeatChange, flush_seconds: float) -> None:
        """A change just applied, to every stream: framed once, sent at the end of the flush window, so that
        the changes of a window go in one write per stream (a write, not a change, is what a delivery costs)."""
        if not self.subscribers:
            return
        frame = change_frame(change)
        for subscriber in list(self.subscribers):
            subscriber.push(frame, wake=False)
        if self.flush is None:
            self.flush = asyncio.get_running_loop().call_later(flush_seconds, self._wake_streams)

    def heartbeat(self, now: float, send_timeout: float) -> None:
        """A comment to idle streams; a stream whose write has hung past `send_timeout` is ended."""
        for subscriber in list(self.subscribers):
            if subscriber.stuck(now, send_timeout):
                subscriber.close("stuck")
            elif not subscriber.frames:
                subscriber.push(HEARTBEAT)

    def close_streams(self, reason: str) -> None:
        for subscriber in list(self.subscribers):
            subscriber.close(reason)

    def _wake_streams(self) -> None:
        self.flush = None
        for subscriber in list(self.subscribers):
            subscriber.wake()
