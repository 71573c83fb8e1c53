"""The seat changes of every showtime, from Postgres, on ONE connection per API process (LISTEN).

Migration 0006 has Postgres notify each seat-map change on `<schema>_seat_map` at COMMIT, in commit
order, which is version order for each showtime: `<showtimeId>:<version>:<status>:<seat>,<seat>...`.
This process listens once and hands every change to its LiveSeatMaps, however many clients read or
stream. Why not Kafka: docs/seat-map.md.

What can go wrong: the connection drops (Postgres restarts, a network cut, the backend is terminated);
asyncpg tells us, or the ping every `ping_seconds` finds out. Changes committed meanwhile are not
delivered to us, so the maps hear `feed_down`, and after LISTEN again `feed_up`, which reloads them all.
A payload that is not a change is logged and skipped (a version after it then shows as a gap).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import asyncpg
from ticketing.logs import log_action
from ticketing.outbox import QUERIES
from ticketing.transient import TRANSIENT_ERRORS

from hold_service.adapters.seat_maps import LiveSeatMaps
from hold_service.domain.seat_map import SeatChange

logger = logging.getLogger(__name__)
RETRY_SECONDS = (0.1, 2.0)  # reconnect delay: first, most
FEED_ERRORS: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, asyncpg.PostgresError)


def parse_change(payload: str) -> SeatChange:
    showtime_id, version, status, seats = payload.split(":", 3)
    return SeatChange(int(showtime_id), int(version), status, tuple(seats.split(",")) if seats else ())


class PgSeatMapFeed:
    def __init__(self, dsn: str, maps: LiveSeatMaps, *, ping_seconds: float = 5.0,
                 timeout_seconds: float = 2.0) -> None:
        self.dsn, self.maps, self.ping_seconds, self.timeout = dsn, maps, ping_seconds, timeout_seconds
        self.backend_pid: int | None = None  # the listening backend (tests terminate it)
        self.listening = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        delay = RETRY_SECONDS[0]
        while not stop.is_set():
            try:
                await self._listen(stop)
                delay = RETRY_SECONDS[0]
            except FEED_ERRORS as exc:
                log_action(logger, "seatmap.feed_lost", str(exc), level=logging.WARNING, error=type(exc).__name__)
            self.maps.feed_down()
            self.listening.clear()
            self.backend_pid = None
            if not stop.is_set():
                await _first(stop.wait(), asyncio.sleep(delay))
                delay = min(delay * 2, RETRY_SECONDS[1])

    async def _listen(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(self.dsn, timeout=self.timeout,
                                     server_settings={"application_name": "hold-service seat-map feed"})
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _: lost.set())
        try:
            schema = await conn.fetchval(QUERIES.current_schema, timeout=self.timeout)
            await conn.add_listener(f"{schema}_seat_map", self._notified)
            self.backend_pid = conn.get_server_pid()
            self.maps.feed_up()  # after LISTEN: every change from now on reaches us
            self.listening.set()
            log_action(logger, "seatmap.feed_listening", channel=f"{schema}_seat_map")
            while not stop.is_set():
                await _first(stop.wait(), lost.wait(), asyncio.sleep(self.ping_seconds))
                if lost.is_set():
                    raise ConnectionResetError("the seat-map feed's connection closed")
                if not stop.is_set():
                    await conn.fetchval(QUERIES.current_schema, timeout=self.timeout)  # ping
        finally:
            try:
                await conn.close(timeout=self.timeout)
            except FEED_ERRORS:
                conn.terminate()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        try:
            change = parse_change(str(payload))
        except ValueError:
            log_action(logger, "seatmap.bad_notification", level=logging.ERROR, payload=str(payload)[:200])
            return
        self.maps.apply(change)


async def maintain(maps: LiveSeatMaps, stop: asyncio.Event, heartbeat_seconds: float,
                   send_timeout: float) -> None:
    """The maps' clock: `tick` every second, a heartbeat every `heartbeat_seconds`."""
    loop = asyncio.get_running_loop()
    last_heartbeat = loop.time()
    while not stop.is_set():
        await _first(stop.wait(), asyncio.sleep(1.0))
        heartbeat = loop.time() - last_heartbeat >= heartbeat_seconds
        if heartbeat:
            last_heartbeat = loop.time()
        maps.tick(heartbeat, send_timeout)


async def _first(*waits: Any) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
