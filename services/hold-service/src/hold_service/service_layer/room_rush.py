"""A waiting room that opens itself at a rush and closes after it (docs/waiting-room.md, "The automatic mode";
the rules: domain/room_rush.py).

Arrivals are counted where customers come to a showtime: a hold request, a queue join, and the seat-map page's
look at the room (GET /showtimes/{id}/waiting-room, once per page). One Redis script run per showtime and loop
turn counts them (adapters/room_queue.py); the count comes back with the crowd's figures, and the request that
finds them past a threshold while the room is off opens it: a conditional write in Postgres with its
WaitingRoomOpened, so that it happens once whichever of the API processes get there together. That request
itself then needs an admission token, as every later one (each process sees the room on within
WAITING_ROOM_CACHE_SECONDS). Redis down: nothing is counted, no room opens by itself (a forced room is as
before), the hold path goes on.

Closing is the worker's `rooms` role (`watch_rooms`, every WAITING_ROOM_AUTO_CHECK_SECONDS, any number of
replicas): for each open automatic room it takes an admission step (the queue moves even if nobody polls),
reads the crowd and the queue, records in Postgres since when the rush has been over, and closes the room
once that is WAITING_ROOM_AUTO_CLOSE_AFTER_SECONDS old (a conditional UPDATE, with its WaitingRoomClosed).
"""

from __future__ import annotations

import logging

from prometheus_client import Counter, Gauge
from ticketing.logs import log_action

from hold_service.config import HoldSettings
from hold_service.domain.room_rush import RoomLoad, Thresholds, opening_reason, rush_over
from hold_service.domain.waiting_room import RoomConfig
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.room_steps import advance_room, forget_room

logger = logging.getLogger(__name__)
MAX_ROOMS = 500  # open automatic rooms one run of the `rooms` role looks at

OPEN = Gauge("ticketing_waiting_rooms_open",
             "Waiting rooms on now (forced or opened by themselves), as the worker last counted",
             multiprocess_mode="mostrecent")
OPENED = Counter("ticketing_waiting_room_opened_total", "Waiting rooms turned on by this process, by reason",
                 ["reason"])
CLOSED = Counter("ticketing_waiting_room_closed_total", "Waiting rooms turned off by this process, by reason",
                 ["reason"])
for _reason in ("ARRIVALS", "ACTIVE", "OPERATOR"):
    OPENED.labels(_reason)  # exported at 0 from the start: "none opened" reads as 0, not as missing
for _reason in ("OPERATOR", "RUSH_OVER"):
    CLOSED.labels(_reason)


def defaults(settings: HoldSettings) -> Thresholds:
    return Thresholds(settings.waiting_room_auto_open_at_arrivals_per_minute,
                      settings.waiting_room_auto_open_at_active)


def automatic(config: RoomConfig | None, settings: HoldSettings) -> bool:
    """Whether the platform decides this room: its mode is auto, or nobody configured it and the deployment
    gives such showtimes the automatic mode."""
    return config.mode == "auto" if config is not None else settings.waiting_room_auto_default


async def note_arrival(showtime_id: int, customer_id: int, deps: Deps) -> RoomConfig | None:
    """Count the customer at the showtime; open its automatic room if the crowd is past a threshold. The
    room's configuration as this process now knows it (None: no room)."""
    config = await deps.rooms.config(showtime_id)
    settings = deps.settings
    if not automatic(config, settings):
        return config
    crowd = await deps.queue.arrive(showtime_id, customer_id, settings.admission_token_ttl_seconds)
    if crowd is None or (config is not None and config.enabled):
        return config
    reason = opening_reason(crowd, config.thresholds(defaults(settings)) if config else defaults(settings))
    if reason is None:
        return config
    limit = config.active_limit if config is not None else settings.waiting_room_auto_active_limit
    opened = await deps.rooms.open_automatically(showtime_id, reason, limit)
    if opened is not None:
        OPENED.labels(reason).inc()
        log_action(logger, "room.opened", showtime_id=showtime_id, reason=reason, active_limit=opened.active_limit,
                   arrivals_per_minute=crowd.arrivals_per_minute, active=crowd.active)
        return opened
    return await deps.rooms.config(showtime_id)


async def watch_rooms(deps: Deps) -> int:
    """The worker's `rooms` role: close the open automatic rooms whose rush is over. Returns how many closed."""
    closed = 0
    for config in await deps.rooms.automatic_rooms(MAX_ROOMS):
        closed += await _watch(config, deps)
    OPEN.set(await deps.rooms.rooms_on())
    return closed


async def _watch(config: RoomConfig, deps: Deps) -> int:
    sid, settings = config.showtime_id, deps.settings
    await advance_room(sid, deps)  # the queue moves (abandoned turns dropped) even when nobody polls
    crowd = await deps.queue.crowd(sid, settings.admission_token_ttl_seconds)
    figures = await deps.queue.figures(sid)
    if crowd is None or figures is None:  # Redis cannot tell: the room stays as it is (never closed blind)
        return 0
    quiet = rush_over(crowd, RoomLoad(figures.queued, figures.sold_out), config.thresholds(defaults(settings)))
    if await deps.rooms.note_quiet(sid, quiet) is None:
        return 0
    if (done := await deps.rooms.close_automatically(sid, settings.waiting_room_auto_close_after_seconds)) is None:
        return 0
    CLOSED.labels("RUSH_OVER").inc()
    forget_room(sid)
    log_action(logger, "room.closed", showtime_id=sid, reason="RUSH_OVER", active_limit=done.active_limit,
               arrivals_per_minute=crowd.arrivals_per_minute, active=crowd.active, sold_out=figures.sold_out)
    return 1


def operator_changed(config: RoomConfig) -> None:
    """An operator's configuration turned the room on or off (its event written with it)."""
    (OPENED if config.enabled else CLOSED).labels("OPERATOR").inc()
    if not config.enabled:
        forget_room(config.showtime_id)
    log_action(logger, "room.opened" if config.enabled else "room.closed", showtime_id=config.showtime_id,
               reason="OPERATOR", active_limit=config.active_limit)
