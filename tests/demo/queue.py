"""The waiting room as a customer and an operator use it (docs/waiting-room.md):

    PUT  /admin/showtimes/{id}/waiting-room {"enabled": true, "activeLimit": N}   the operator turns it on
    POST /showtimes/{id}/queue -> 202 {"ticket", "position"}                        a customer joins
    GET  /queue/{ticket} -> {"admitted": false, "position", "estimatedWaitSeconds"}
                         or {"admitted": true, "admissionToken"}                    ... and polls
    POST /showtimes/{id}/holds with X-Admission-Token                               holds once admitted
    GET  /admin/showtimes/{id}/waiting-room -> {"queueLength", "active", ...}      the dashboard's queue

`--waiting-room` (or `--waiting-room on`) puts every showtime of the sale behind a room. `--waiting-room auto`
leaves the rooms to themselves (no operator action): a customer looks at the room first, as the seat-map page
does (GET /showtimes/{id}/waiting-room: an arrival the room counts), queues if it is on, and goes to the queue
when a hold is answered 403 ADMISSION_REQUIRED (the room opened while he chose); the closing table then says
when each room opened and closed itself (WaitingRoomOpened / WaitingRoomClosed). A hold-service without the
room answers the PUT with 404 or 405: the demo then stops before the sale and says so (RoomMissing), rather
than running a sale that is not the one asked for.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..e2e.saga.history import History, Journey

TOKEN_HEADER = "X-Admission-Token"
POLL_SECONDS = (0.5, 3.0)  # the poll interval: at least, at most (the room's estimate in between)


class RoomMissing(RuntimeError):
    """hold-service has no waiting room (the route is not there)."""


async def open_room(client: httpx.AsyncClient, hold_url: str, admin: dict[str, str], showtime: int,
                    active_limit: int) -> None:
    r = await client.put(f"{hold_url}/admin/showtimes/{showtime}/waiting-room", headers=admin,
                         json={"enabled": True, "activeLimit": active_limit})
    if r.status_code in (404, 405):  # the showtime was just made: it is the route that is missing
        raise RoomMissing(f"PUT /admin/showtimes/{showtime}/waiting-room answered {r.status_code}: this "
                          f"hold-service has no waiting room; run without --waiting-room")
    if r.status_code != 200:
        raise RuntimeError(f"PUT /admin/showtimes/{showtime}/waiting-room answered {r.status_code}: {r.text[:300]}")


async def room_on(history: History, process: str, j: Journey, client: httpx.AsyncClient, hold_url: str,
                  auth: dict[str, str], showtime: int) -> bool:
    """The seat-map page's look: whether the showtime's room is on now (no answer: as if off; a hold says)."""
    r = await history.call(process, j.id, "room_look", {"showtime": showtime},
                           lambda: client.get(f"{hold_url}/showtimes/{showtime}/waiting-room", headers=auth))
    return r is not None and r.status_code == 200 and bool(r.json().get("enabled"))


async def wait_rooms_closed(client: httpx.AsyncClient, hold_url: str, admin: dict[str, str], showtimes: list[int],
                            timeout: float) -> tuple[float, dict[int, dict[str, Any]]]:
    """After the sale (--waiting-room auto): wait until no showtime's room is on (the rooms close themselves once
    their rush has been over a while); the seconds waited, and the rooms' last figures (the operator's view)."""
    started = time.monotonic()
    while True:
        rooms = {s: room for s in showtimes if (room := await room_figures(client, hold_url, admin, s))}
        if all(not room.get("enabled") for room in rooms.values()) or time.monotonic() - started >= timeout:
            return time.monotonic() - started, rooms
        await asyncio.sleep(1.0)


async def room_figures(client: httpx.AsyncClient, hold_url: str, admin: dict[str, str],
                       showtime: int) -> dict[str, Any] | None:
    """The operator's view (queueLength, active, admittedTotal), or None when it cannot be read now."""
    try:
        r = await client.get(f"{hold_url}/admin/showtimes/{showtime}/waiting-room", headers=admin, timeout=5)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None


@dataclass
class Admissions:
    """One customer's admission tokens, per showtime; a showtime without a room needs none."""

    rooms: set[int] = field(default_factory=set)  # showtimes behind a waiting room
    tokens: dict[int, str] = field(default_factory=dict)

    def headers(self, showtime: int) -> dict[str, str]:
        token = self.tokens.get(showtime)
        return {TOKEN_HEADER: token} if token else {}


async def wait_admitted(history: History, process: str, j: Journey, client: httpx.AsyncClient, hold_url: str,
                        auth: dict[str, str], showtime: int, deadline: float) -> str | None:
    """Join the showtime's queue and poll until admitted: the admission token; None when the showtime sold
    out, the deadline passed or the room refused (every call recorded in the history as queue_join /
    queue_poll)."""
    r = await history.call(process, j.id, "queue_join", {"showtime": showtime},
                           lambda: client.post(f"{hold_url}/showtimes/{showtime}/queue", headers=auth))
    if r is None or r.status_code != 202:
        return None
    body = r.json()
    if body.get("soldOut"):
        j.notes.append("sold_out")
        return None
    ticket = body["ticket"]
    while time.monotonic() < deadline:
        r = await history.call(process, j.id, "queue_poll", {"showtime": showtime},
                               lambda: client.get(f"{hold_url}/queue/{ticket}", headers=auth))
        status = r.json() if r is not None and r.status_code == 200 else {}
        if status.get("admitted") and status.get("admissionToken"):
            return str(status["admissionToken"])
        if status.get("soldOut"):
            j.notes.append("sold_out")
            return None
        wait = status.get("estimatedWaitSeconds") or POLL_SECONDS[0]
        await asyncio.sleep(min(POLL_SECONDS[1], max(POLL_SECONDS[0], float(wait) / 4)))
    j.notes.append("queue_deadline")
    return None
