"""The Redis seat gate: rejects requests for seats surely taken before they reach Postgres.

Keys `seat:{showtimeId}:code` (hash-tagged: one Redis Cluster slot per showtime) hold the hold id with
the hold's TTL. The gate only ever says "taken" for a key a live hold set, so a flushed or restarted
Redis lets more requests through to Postgres, which still decides; it can never admit a double hold.
"""

from __future__ import annotations

import uuid

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript
from hold_service.adapters.room_queue import room_key


def seat_key(showtime_id: int, seat: str) -> str:
    return f"seat:{{{showtime_id}}}:{seat}"


class SeatGate:
    """The null gate (SEAT_GATE_ENABLED=false): admits everything."""

    async def try_hold(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                       ttl_seconds: float) -> list[str]:
        """The seats the gate knows are taken; [] = go on to Postgres."""
        return []

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        return None


class RedisSeatGate(SeatGate):
    def __init__(self, guard: RedisGuard) -> None:
        self.guard = guard
        # EVALSHA, and on NOSCRIPT (a restarted or flushed Redis) load and retry.
        self.try_hold_script = LuaScript(guard.client, "try_hold.lua")  # also pipelined by admission.py
        self._release = LuaScript(guard.client, "release.lua")

    async def try_hold(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                       ttl_seconds: float) -> list[str]:
        # The script's last two keys are the waiting room's; unused without a slot to check ('').
        keys = [seat_key(showtime_id, s) for s in seats] + [room_key(showtime_id, n) for n in ("active", "state")]
        answers = await self.guard.call("gate.try_hold", self.try_hold_script(
            keys, [int(ttl_seconds * 1000), len(seats), str(hold_id), "", ""]))
        return [seats[int(i) - 1] for i in (answers[0] if answers else [])]

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        keys = [seat_key(showtime_id, s) for s in seats]
        await self.guard.call("gate.release", self._release(keys, [str(hold_id)]))
