"""When a waiting room in the automatic mode turns itself on and off (docs/waiting-room.md, "The automatic mode").

Pure: the figures are measured in Redis (adapters/room_queue.py, lua/room_arrive.lua) and the decision is
recorded in Postgres (adapters/room_store.py); this only says what they mean.

- It opens when, at a showtime, the customers new to it in the last minute (`arrivals`) or the customers
  active at it at once (`active`: seen within one slot's length) reach the room's thresholds.
- It closes once its rush is over, and has been for a while (the worker's `rooms` role counts the while, in
  Postgres): both figures under their thresholds AND nobody left in its queue. Nobody queued loses his
  place: the room stays open until its queue has drained, every queued customer admitted in his turn (first
  come, first served). A sold-out showtime is the one exception: nothing is left to queue for.
- Forced modes win: `on` and `off` are never changed by the platform.
- Closing or opening never touches a hold: customers who hold seats keep them and pay as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RoomMode = Literal["on", "off", "auto"]
OpenReason = Literal["ARRIVALS", "ACTIVE"]
MODES: tuple[RoomMode, ...] = ("on", "off", "auto")


@dataclass(frozen=True)
class Thresholds:
    """When an automatic room opens (the operator's, or the deployment's WAITING_ROOM_AUTO_* defaults)."""

    arrivals_per_minute: int
    active: int


@dataclass(frozen=True)
class Crowd:
    """A showtime's crowd as Redis counted it; losing the counts (a Redis loss) only delays an opening."""

    arrivals_per_minute: int  # customers new to the showtime in the last minute
    active: int  # customers seen at the showtime within one slot's length


@dataclass(frozen=True)
class RoomLoad:
    """An open room's figures after its last admission step."""

    queued: int
    sold_out: bool


def opening_reason(crowd: Crowd, thresholds: Thresholds) -> OpenReason | None:
    """Why an automatic room that is off must open now, or None. Arrivals first: a burst is the rush's sign."""
    if crowd.arrivals_per_minute >= thresholds.arrivals_per_minute:
        return "ARRIVALS"
    if crowd.active >= thresholds.active:
        return "ACTIVE"
    return None


def rush_over(crowd: Crowd, load: RoomLoad, thresholds: Thresholds) -> bool:
    """Whether an open automatic room's rush is over now (it closes once it has been for a while)."""
    drained = load.queued == 0 or load.sold_out
    return drained and opening_reason(crowd, thresholds) is None


def enabled_after(mode: RoomMode, enabled_now: bool) -> bool:
    """Whether a room is on after its operator set `mode`: forced, or as it was for the automatic mode (the
    platform opens or closes it from the figures, never at the operator's change)."""
    return mode == "on" or (mode == "auto" and enabled_now)


def mode_of(enabled: bool | None, mode: RoomMode | None) -> RoomMode:
    """The mode a request asks for: `mode`, or the older `enabled` (true: on, false: off)."""
    if mode is not None:
        return mode
    return "on" if enabled else "off"
