"""Admission of a hold request: the rate limits (per customer, per address), then the seat gate, which also
checks the customer's waiting-room slot while the showtime's room is on.

`RedisAdmission` sends the Lua scripts in ONE network round trip: a non-transactional pipeline of
EVALSHAs. And the requests for one showtime that arrive in the same turn of the event loop (under
load, many: the loop reads many sockets per turn) share that round trip: two rate-limit EVALSHAs per
request (its customer's, its address's), then ONE gate script run that takes their seats one request after
the other (ticketing.batching). The waiting room's slot check rides in the gate script: the room's keys
share the showtime's hash slot (`wr:{42}:active` beside `seat:{42}:F5`), so it costs no extra trip.
On the path most requests take under load (the gate answers 409) the Redis client's per-call cost
was the largest part of a worker's CPU after the framework (py-spy).
Why not one script: the rate-limit keys are per customer and per address and the gate keys per showtime
(`seat:{showtimeId}:...`); one script touching them all would break Redis Cluster (a script's keys must
share a hash slot). Each script keeps its own keys in one slot; on a Cluster the calls go to their nodes
as separate concurrent calls (redis_script.run_together), the gate's still one script run per showtime.
MULTI is not needed: no script depends on another's result.
The price: the gate script runs even when a limiter says no. Its keys are then released at once
(a rare extra round trip), and a refused customer (or address) is refused in-process until the limiter's
Retry-After passes, so a client hammering past its limit cannot keep seats gated through refused
requests. Postgres still decides every hold; this only filters.
"""

from __future__ import annotations

import math
import time
import uuid
from datetime import datetime
from typing import Any

from ticketing.batching import TickBatcher

from hold_service.adapters.rate_limit import RateLimiter, RedisRateLimiter, count_refusal, log_refusal
from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import Call, run_together
from hold_service.adapters.seat_gate import RedisSeatGate, SeatGate, gate_tail, seat_key
from hold_service.domain.waiting_room import AdmissionPass
from hold_service.service_layer.ports import Admission, Admitted, GateSeat, RoomQueue

MAX_REMEMBERED = 10_000  # refused customers and addresses remembered per process
Request = tuple[int, list[str], uuid.UUID, str | None, AdmissionPass | None]  # customer, seats, hold, address, slot
# The customer's limiter's wait in ms, the address's (0: admitted), the gate's answer (taken seat indexes, or
# -1: the slot is over), whether the gate lost its mark (Redis lost the showtime's keys).
Answer = tuple[int, int, list[int] | int, bool]


class SequentialAdmission(Admission):
    """The limiters, the slot, then the gate, one call after the other (the null gate: SEAT_GATE_ENABLED=false)."""

    def __init__(self, limiter: RateLimiter, gate: SeatGate, queue: RoomQueue) -> None:
        self.limiter, self.gate, self.queue = limiter, gate, queue

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        wait = await self.limiter.retry_after(customer_id)
        if address is not None:
            wait = _longer(wait, await self.limiter.retry_after_address(address))
        if wait is not None:
            return Admitted(wait, [])
        if slot is not None and await self.queue.slot_live(slot) is False:  # None: Redis down, the token's word
            return Admitted(None, [], slot_ended=True)
        return Admitted(None, await self.gate.try_hold(showtime_id, seats, hold_id, ttl_seconds))

    async def address_wait(self, address: str) -> int | None:
        return await self.limiter.retry_after_address(address)

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        await self.gate.release(showtime_id, seats, hold_id)

    async def refill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        return await self.gate.fill(showtime_id, seats, mark_seconds)

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        await self.gate.keep(showtime_id, seats, hold_id, until)


class RedisAdmission(SequentialAdmission):
    def __init__(self, guard: RedisGuard, limiter: RedisRateLimiter, gate: RedisSeatGate, queue: RoomQueue) -> None:
        super().__init__(limiter, gate, queue)
        self.guard, self.redis_limiter, self.redis_gate = guard, limiter, gate
        self._refused: dict[int | str, float] = {}  # customer or address -> monotonic time its refusal lasts to
        # Requests for one showtime arriving in the same loop turn share one round trip and gate script.
        self._batches: TickBatcher[tuple[int, int], Request, Answer] = TickBatcher(self._admit_many)

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        now = time.monotonic()
        wait = self._remembered(customer_id, now)
        if address is not None:
            wait = _longer(wait, self._remembered(address, now))
        if wait is not None:
            return Admitted(wait, [])
        got = await self._batches.add((showtime_id, int(ttl_seconds * 1000)),
                                      (customer_id, seats, hold_id, address, slot))
        if got is None:
            # Redis unavailable: the limits and the gate fail open, as each did alone, and Postgres decides;
            # a token's slot is taken on the token's word (it lapses soon, and nobody new is admitted).
            return Admitted(None, [])
        customer_ms, address_ms, gate, lost = got
        if customer_ms or address_ms:
            if gate == []:  # the gate took the seats for a refused request: give them back now
                await self.gate.release(showtime_id, seats, hold_id)
            if customer_ms:
                wait = self._refuse(customer_id, customer_ms, now)
            if address_ms and address is not None:
                wait = _longer(wait, self._refuse(address, address_ms, now))
            return Admitted(wait, [])
        if isinstance(gate, int):
            return Admitted(None, [], slot_ended=True, gate_lost=lost)
        return Admitted(None, [seats[int(i) - 1] for i in gate], gate_lost=lost)

    async def address_wait(self, address: str) -> int | None:
        now = time.monotonic()
        if (wait := self._remembered(address, now)) is not None:
            return wait
        limit = self.redis_limiter
        got = await self.guard.call("ratelimit.address", self._run_together(
            [(limit.address_script, *limit.address_call(address))]))
        return self._refuse(address, int(got[0]), now) if got and got[0] else None

    def _remembered(self, who: int | str, now: float) -> int | None:
        """Seconds `who` still waits after a refusal (counted again: it is refused again), or None."""
        until = self._refused.get(who)
        if until is None:
            return None
        if now < until:
            count_refusal(who)
            return max(1, math.ceil(until - now))
        del self._refused[who]
        return None

    def _refuse(self, who: int | str, wait_ms: int, now: float) -> int:
        if len(self._refused) >= MAX_REMEMBERED:
            self._refused.pop(next(iter(self._refused)))  # the oldest entry
        self._refused[who] = now + wait_ms / 1000
        return log_refusal(who, wait_ms)

    async def _admit_many(self, batch: tuple[int, int], requests: list[Request]) -> list[Answer] | None:
        """The requests of one showtime that arrived in the same loop turn: each one's rate-limit scripts,
        then ONE gate script for all of them (taken in arrival order), in one round trip."""
        showtime_id, ttl_ms = batch
        limit = self.redis_limiter
        calls: list[Call] = []
        for customer, _, _, address, _ in requests:
            calls.append((limit.script, *limit.call(customer)))
            if address is not None:
                calls.append((limit.address_script, *limit.address_call(address)))
        gate_keys = [seat_key(showtime_id, s) for _, seats, _, _, _ in requests for s in seats]
        gate_keys += gate_tail(showtime_id)
        gate_args: list[Any] = [ttl_ms]
        for customer, seats, hold_id, _, slot in requests:
            gate_args += [len(seats), str(hold_id), customer, "" if slot is None else slot.slot_ms]
        calls.append((self.redis_gate.try_hold_script, gate_keys, gate_args))
        results = await self.guard.call("admission", self._run_together(calls))
        if results is None:
            return None
        answers: list[Answer] = []
        limits = iter(results[:-1])
        *gates, marked = results[-1]
        for (_, _, _, address, _), gate in zip(requests, gates, strict=True):
            customer_ms = int(next(limits))
            address_ms = 0 if address is None else int(next(limits))
            answers.append((customer_ms, address_ms, gate, not marked))
        return answers

    async def _run_together(self, calls: list[Call]) -> list[Any]:
        return await run_together(self.guard.client, calls)  # a method: a test counts the exchanges


def _longer(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
