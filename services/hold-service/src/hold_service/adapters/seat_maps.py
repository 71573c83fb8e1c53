"""The seat maps of one API process, in memory, ready to send, moved on by the seat changes.

A map is loaded from Postgres the first time the process is asked for it (one load per showtime at a
time, however many ask), then only the changes move it: the feed (seat_map_feed.py) hands every change
of every showtime, in version order per showtime, to `apply`. A read is a dict lookup and bytes built
once per version; a stream gets each change's frame (seat_map_subscribers.py). Changes that arrive
while a map loads are kept and applied after it, those already in its snapshot skipped.

What can go wrong:
- a gap (a version missed): the map is dropped, its streams closed (their clients reconnect to a fresh
  snapshot) and the next read reloads it;
- the feed is lost: changes may be missed until it is back, when every map is dropped and every stream
  closed. Meanwhile maps are served for `stale_seconds` (the contract's staleness), then read from
  Postgres per request; if Postgres is down too, the last map is served (no seat can change then).
  No new stream is opened without the feed (503); open ones are closed after `stale_seconds`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from prometheus_client import Counter, Gauge
from ticketing.logs import log_action
from ticketing.transient import TRANSIENT_ERRORS

from hold_service.adapters.seat_map_live import LiveMap
from hold_service.adapters.seat_map_source import SeatMapSource
from hold_service.adapters.seat_map_subscribers import Subscriber
from hold_service.adapters.stream_leases import StreamLeases
from hold_service.domain.errors import TooManyStreams
from hold_service.domain.seat_map import SeatChange, Step
from hold_service.service_layer.seat_map_ports import SeatMaps, SeatMapView

logger = logging.getLogger(__name__)
MAX_MISSING = 10_000  # unknown showtimes remembered (404 from memory)

# Summed over the API processes of a pod (uvicorn workers share /metrics: prometheus_client multiprocess).
STREAMS = Gauge("ticketing_seat_map_streams", "Seat-map streams open", multiprocess_mode="livesum")
FEED_UP = Gauge("ticketing_seat_map_feed_up", "1 while the process follows the seat changes (its LISTEN is up)",
                multiprocess_mode="livemin")
RESETS = Counter("ticketing_seat_map_resets_total", "Seat maps dropped and their streams ended, by cause", ["cause"])
STREAMS_ENDED = Counter("ticketing_seat_map_streams_ended_total", "Seat-map streams ended, by why", ["reason"])


class FeedDown(ConnectionError):
    """This process does not receive the seat changes now (answered 503, like any dependency down)."""


def _retrieved(task: asyncio.Task[LiveMap | None]) -> None:
    if not task.cancelled():
        task.exception()


class LiveSeatMaps(SeatMaps):
    def __init__(self, source: SeatMapSource, *, capacity: int, missing_seconds: float, stale_seconds: float,
                 stream_buffer_bytes: int, max_streams: int, flush_seconds: float = 0.0,
                 leases: StreamLeases | None = None) -> None:
        self.source, self.capacity, self.max_streams = source, capacity, max_streams
        self.leases = leases or StreamLeases(None, max_streams)  # per client address
        self._renewed_at = 0.0
        self.missing_seconds, self.stale_seconds = missing_seconds, stale_seconds
        self.buffer_bytes, self.flush_seconds = stream_buffer_bytes, flush_seconds
        self.maps: OrderedDict[int, LiveMap] = OrderedDict()  # least recently read first
        self.loads: dict[int, tuple[asyncio.Task[LiveMap | None], list[SeatChange]]] = {}
        self.missing: dict[int, float] = {}  # showtime -> loop time until which it is known not to exist
        self.listening, self.lost_at, self.generation, self.streams = False, 0.0, 0, 0
        self._renewing: asyncio.Future[None] | None = None

    async def get(self, showtime_id: int) -> SeatMapView | None:
        live = self.maps.get(showtime_id)
        if live is not None and self.cached(showtime_id):
            self.maps.move_to_end(showtime_id)
            return live.view()
        try:
            loaded = await self._load(showtime_id)
        except TRANSIENT_ERRORS:
            if live is None:
                raise
            return live.view()  # Postgres is down: no seat can change until it is back
        return None if loaded is None else loaded.view()

    def cached(self, showtime_id: int) -> bool:
        live = self.maps.get(showtime_id)
        return live is not None and (self.listening or self._now() - self.lost_at < self.stale_seconds)

    async def subscribe(self, showtime_id: int, address: str) -> Subscriber | None:
        if not self.listening:
            raise FeedDown("the seat-map feed is reconnecting")
        live = self.maps.get(showtime_id) or await self._load(showtime_id)
        if live is None:
            return None
        if self.streams >= self.max_streams:
            raise FeedDown(f"this process serves {self.streams} streams, its limit")
        lease = await self.leases.acquire(address)
        if lease is None:
            raise TooManyStreams(self.leases.limit)
        if self.maps.get(showtime_id) is not live:  # not kept (a gap while loading, the feed reconnected)
            self.leases.release(address, lease)
            raise FeedDown("the seat map is reloading")
        subscriber = Subscriber(showtime_id, live.view(), self.buffer_bytes, self._closed, address, lease)
        live.subscribers.add(subscriber)
        self.streams += 1
        STREAMS.inc()
        return subscriber

    def apply(self, change: SeatChange) -> None:
        """From the feed, in version order per showtime."""
        if (load := self.loads.get(change.showtime_id)) is not None:
            load[1].append(change)
        live = self.maps.get(change.showtime_id)
        if live is None:
            return
        step = live.map.apply(change)
        if step is Step.APPLIED:
            live.publish(change, self.flush_seconds)
        elif step is Step.GAP:
            log_action(logger, "seatmap.gap", level=logging.WARNING, showtime_id=change.showtime_id,
                       version=live.map.version, received=change.version)
            RESETS.labels("gap").inc()
            self._forget(change.showtime_id, "reset")

    def feed_up(self) -> None:
        """Listening again: whatever was missed meanwhile is unknown, so every map is reloaded when read."""
        if self.generation:
            RESETS.labels("feed_lost").inc(len(self.maps))
        self.listening, self.generation = True, self.generation + 1
        FEED_UP.set(1)
        for showtime_id in list(self.maps):
            self._forget(showtime_id, "reset")

    def feed_down(self) -> None:
        self.listening, self.lost_at = False, self._now()
        FEED_UP.set(0)

    def tick(self, heartbeat: bool, send_timeout: float) -> None:
        """Every second: streams closed once the feed has been lost too long; with `heartbeat`, a comment
        to idle streams and writes stuck past `send_timeout` ended."""
        now = self._now()
        if now - self._renewed_at >= self.leases.renew_seconds:
            self._renewed_at = now
            self._renewing = asyncio.ensure_future(self.leases.renew())
        if not self.listening and now - self.lost_at >= self.stale_seconds:
            self.close_streams("reset")
        elif heartbeat:
            for live in list(self.maps.values()):
                live.heartbeat(now, send_timeout)

    def close_streams(self, reason: str) -> None:
        for live in list(self.maps.values()):
            live.close_streams(reason)

    async def _load(self, showtime_id: int) -> LiveMap | None:
        if self.missing.get(showtime_id, 0.0) > self._now():
            return None
        if (load := self.loads.get(showtime_id)) is None:
            load = (asyncio.ensure_future(self._load_now(showtime_id)), [])
            load[0].add_done_callback(_retrieved)  # its readers may all have left: no "never retrieved"
            self.loads[showtime_id] = load  # changes from now on are kept for it
        return await asyncio.shield(load[0])  # a reader that gives up does not cancel the others' load

    async def _load_now(self, showtime_id: int) -> LiveMap | None:
        generation = self.generation
        try:
            seat_map = await self.source.load(showtime_id)
        finally:
            _, arrived = self.loads.pop(showtime_id)
        if seat_map is None:
            self._remember_missing(showtime_id)
            return None
        for change in sorted(arrived, key=lambda c: c.version):
            if seat_map.apply(change) is Step.GAP:  # a change was missed: serve the snapshot, keep nothing
                return LiveMap(seat_map)
        live = LiveMap(seat_map)
        if generation == self.generation:  # else it may predate the feed's LISTEN: not followed, not kept
            self._forget(showtime_id, "reset")
            self._keep(showtime_id, live)
        return live

    def _keep(self, showtime_id: int, live: LiveMap) -> None:
        """Kept, and the least read others without streams go past the capacity (never the one just loaded:
        with the capacity taken by streamed maps, it would go at once and no stream of it could open)."""
        self.maps[showtime_id] = live
        for old_id in list(self.maps):
            if len(self.maps) <= self.capacity:
                break
            if old_id != showtime_id and not self.maps[old_id].subscribers:
                del self.maps[old_id]

    def _forget(self, showtime_id: int, reason: str) -> None:
        if (live := self.maps.pop(showtime_id, None)) is not None:
            live.close_streams(reason)

    def _closed(self, subscriber: Subscriber) -> None:
        live = self.maps.get(subscriber.showtime_id)
        if live is not None:
            live.subscribers.discard(subscriber)
            if not live.subscribers and len(self.maps) > self.capacity:
                del self.maps[subscriber.showtime_id]  # its last stream pinned it past the capacity
        self.leases.release(subscriber.address, subscriber.lease)
        self.streams -= 1
        STREAMS.dec()
        STREAMS_ENDED.labels(subscriber.closed or "unknown").inc()

    def _remember_missing(self, showtime_id: int) -> None:
        """Bounded: ids made up faster than they lapse only cost Postgres lookups, never memory."""
        now = self._now()
        if len(self.missing) >= MAX_MISSING:
            self.missing = {sid: until for sid, until in self.missing.items() if until > now}
            if len(self.missing) >= MAX_MISSING:
                self.missing.clear()
        self.missing[showtime_id] = now + self.missing_seconds

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()
