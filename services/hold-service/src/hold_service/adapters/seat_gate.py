"""The Redis seat gate: rejects requests for seats surely taken before they reach Postgres.

Keys `seat:{showtimeId}:code` (hash-tagged: one Redis Cluster slot per showtime) hold the hold id with
the hold's TTL. The gate only ever says "taken" for a key a live hold set, so a flushed or restarted
Redis lets more requests through to Postgres, which still decides; it can never admit a double hold.
`seatgate:{showtimeId}:loaded` marks a gate that knows every held and booked seat: without it (Redis lost
it) the gate is refilled from Postgres (service_layer/gate_refill.py), else every click on a seat held
before the loss would reach Postgres until someone holds that seat again.

The gate script (lua/try_hold.lua) also checks the waiting-room slot of each request. A gate that is off
(SEAT_GATE_ENABLED=false) asks it for the slots only: it names no seat, so it says "taken" for nothing, and
it keeps no keys.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from redis.exceptions import RedisError
from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import Call, LuaScript, run_together
from hold_service.adapters.room_queue import room_key
from hold_service.domain.waiting_room import AdmissionPass
from hold_service.service_layer.ports import Ended, GateSeat

logger = logging.getLogger(__name__)
RELEASE_RETRY_FIRST, RELEASE_RETRY_MAX = 0.5, 10.0  # seconds between the tries of a release Redis missed
RELEASE_RETRY_SECONDS = 1260.0  # past the longest hold (HOLD_MAX_SECONDS, 1,200 s by default): its keys lapsed
Asking = tuple[int, list[str], uuid.UUID, AdmissionPass | None]  # customer, seats, hold, slot
# Per request: the indexes (1-based) of its seats already taken, or -1 when its slot is over.
GateAnswer = list[int] | int


def seat_key(showtime_id: int, seat: str) -> str:
    return f"seat:{{{showtime_id}}}:{seat}"


def mark_key(showtime_id: int) -> str:
    return f"seatgate:{{{showtime_id}}}:loaded"


def ttl_ms(until: datetime | None) -> int:
    """A key's TTL to `until` (at least 1 ms); 0 for None (a booked seat: it lasts as the gate's mark)."""
    if until is None:
        return 0
    return max(1, int((until - datetime.now(UTC)).total_seconds() * 1000))


class SeatGate:
    def __init__(self, guard: RedisGuard, enabled: bool = True) -> None:
        self.guard, self.enabled = guard, enabled
        # EVALSHA, and on NOSCRIPT (a restarted or flushed Redis) load and retry.
        self.try_hold = LuaScript(guard.client, "try_hold.lua")
        self._release = LuaScript(guard.client, "release.lua")
        self._fill = LuaScript(guard.client, "fill.lua")
        self._keep = LuaScript(guard.client, "keep.lua")
        self._note = LuaScript(guard.client, "note.lua")
        self._later: set[asyncio.Future[None]] = set()  # releases Redis missed, being tried again

    def call(self, showtime_id: int, ttl_ms: int, asking: list[Asking]) -> Call | None:
        """The gate script's call for requests of one showtime, taken one after the other; None when there
        is nothing to ask (the gate is off and no request has a slot to check)."""
        if not self.enabled and all(slot is None for *_, slot in asking):
            return None
        keys: list[str] = []
        args: list[Any] = [ttl_ms]
        for customer, seats, hold_id, slot in asking:
            named = seats if self.enabled else []
            keys += [seat_key(showtime_id, s) for s in named]
            args += [len(named), str(hold_id), customer, "" if slot is None else slot.slot_ms]
        return self.try_hold, keys + gate_tail(showtime_id), args

    def answers(self, result: list[Any] | None, requests: int) -> tuple[list[GateAnswer], bool]:
        """Each request's answer, and whether Redis lost the gate (its mark is gone: refill it)."""
        if result is None:
            return [[] for _ in range(requests)], False
        *gates, marked = result
        return gates, self.enabled and not marked

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        """The hold's keys go (release_holds)."""
        await self.release_holds([(showtime_id, seats, hold_id)])

    async def release_holds(self, holds: list[Ended]) -> None:
        """The keys of these holds go, each only while it still names its hold: one script call per showtime (its
        keys share a slot), all in one round trip (run_together). If Redis did not answer, again in the
        background until it does (or the keys would have lapsed): a key left behind says "taken" for a free seat
        until its TTL, the hold's whole time."""
        if not self.enabled or not holds:
            return
        calls = self._release_calls(holds)
        if await self.guard.call("gate.release", run_together(self.guard.client, calls)) is None:
            task = asyncio.ensure_future(self._release_later(calls))
            self._later.add(task)
            task.add_done_callback(self._later.discard)

    def _release_calls(self, holds: list[Ended]) -> list[Call]:
        keys: dict[int, list[str]] = {}
        owners: dict[int, list[str]] = {}
        for showtime_id, seats, hold_id in holds:
            keys.setdefault(showtime_id, []).extend(seat_key(showtime_id, s) for s in seats)
            owners.setdefault(showtime_id, []).extend(str(hold_id) for _ in seats)
        return [(self._release, keys[showtime_id], owners[showtime_id]) for showtime_id in keys]

    async def _release_later(self, calls: list[Call]) -> None:
        delay, deadline = RELEASE_RETRY_FIRST, time.monotonic() + RELEASE_RETRY_SECONDS
        while time.monotonic() < deadline:
            await asyncio.sleep(delay)
            try:
                await run_together(self.guard.client, calls)
            except (RedisError, OSError):  # the guard's window is not waited for: this is in the background
                delay = min(delay * 2, RELEASE_RETRY_MAX)
                continue
            log_action(logger, "gate.released_late", keys=sum(len(keys) for _, keys, _ in calls))
            return

    async def fill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        """The keys of `seats`, naming their holds, then the mark; None when Redis is unavailable."""
        if not self.enabled:
            return 0
        args: list[Any] = [int(mark_seconds * 1000)]
        for seat in seats:
            args += [str(seat.hold_id), ttl_ms(seat.until)]
        keys = [mark_key(showtime_id)] + [seat_key(showtime_id, seat.code) for seat in seats]
        done = await self.guard.call("gate.fill", self._fill(keys, args))
        return None if done is None else int(done)

    async def note(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        """Keys for the seats of a hold whose seats Postgres chose (best available), without the gate's mark."""
        if self.enabled:
            keys = [seat_key(showtime_id, s) for s in seats]
            await self.guard.call("gate.note", self._note(keys, [str(hold_id), ttl_ms(until)]))

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        if self.enabled:
            keys = [seat_key(showtime_id, s) for s in seats]
            await self.guard.call("gate.keep", self._keep(keys, [str(hold_id), ttl_ms(until)]))


def gate_tail(showtime_id: int) -> list[str]:
    """The keys the gate script reads after the seats: the gate's mark, then the waiting room's."""
    return [mark_key(showtime_id)] + [room_key(showtime_id, n) for n in ("active", "state")]
