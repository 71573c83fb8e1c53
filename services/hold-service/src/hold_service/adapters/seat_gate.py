"""The Redis seat gate: rejects requests for seats surely taken before they reach Postgres.

Keys `seat:{showtimeId}:code` (hash-tagged: one Redis Cluster slot per showtime) hold the hold id with
the hold's TTL. The gate only ever says "taken" for a key a live hold set, so a flushed or restarted
Redis lets more requests through to Postgres, which still decides; it can never admit a double hold.
`seatgate:{showtimeId}:loaded` marks a gate that knows every held and booked seat: without it (Redis lost
it) the gate is refilled from Postgres (service_layer/gate_refill.py), else every click on a seat held
before the loss would reach Postgres until someone holds that seat again.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript
from hold_service.adapters.room_queue import room_key
from hold_service.service_layer.ports import GateSeat


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
    """The null gate (SEAT_GATE_ENABLED=false): admits everything."""

    async def try_hold(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                       ttl_seconds: float) -> list[str]:
        """The seats the gate knows are taken; [] = go on to Postgres."""
        return []

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        return None

    async def fill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        return 0

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        return None


class RedisSeatGate(SeatGate):
    def __init__(self, guard: RedisGuard) -> None:
        self.guard = guard
        # EVALSHA, and on NOSCRIPT (a restarted or flushed Redis) load and retry.
        self.try_hold_script = LuaScript(guard.client, "try_hold.lua")  # also pipelined by admission.py
        self._release = LuaScript(guard.client, "release.lua")
        self._fill = LuaScript(guard.client, "fill.lua")
        self._keep = LuaScript(guard.client, "keep.lua")

    async def try_hold(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                       ttl_seconds: float) -> list[str]:
        # The script's last three keys are the gate's mark and the waiting room's; the room's are unused
        # without a slot to check ('').
        keys = [seat_key(showtime_id, s) for s in seats] + gate_tail(showtime_id)
        answers = await self.guard.call("gate.try_hold", self.try_hold_script(
            keys, [int(ttl_seconds * 1000), len(seats), str(hold_id), "", ""]))
        return [seats[int(i) - 1] for i in (answers[0] if answers else [])]

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        keys = [seat_key(showtime_id, s) for s in seats]
        await self.guard.call("gate.release", self._release(keys, [str(hold_id)]))

    async def fill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        """The keys of `seats`, naming their holds, then the mark; None when Redis is unavailable."""
        args: list[Any] = [int(mark_seconds * 1000)]
        for seat in seats:
            args += [str(seat.hold_id), ttl_ms(seat.until)]
        keys = [mark_key(showtime_id)] + [seat_key(showtime_id, seat.code) for seat in seats]
        done = await self.guard.call("gate.fill", self._fill(keys, args))
        return None if done is None else int(done)

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        keys = [seat_key(showtime_id, s) for s in seats]
        await self.guard.call("gate.keep", self._keep(keys, [str(hold_id), ttl_ms(until)]))


def gate_tail(showtime_id: int) -> list[str]:
    """The keys the gate script reads after the seats: the gate's mark, then the waiting room's."""
    return [mark_key(showtime_id)] + [room_key(showtime_id, n) for n in ("active", "state")]
