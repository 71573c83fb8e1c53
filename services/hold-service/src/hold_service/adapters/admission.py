"""Admission of a hold request: the rate limits (per customer, per address), then the seat gate, which also
checks the customer's waiting-room slot while the showtime's room is on. One path whatever SEAT_GATE_ENABLED
says: a gate that is off names no seats (adapters/seat_gate.py).

The limits fail open: with Redis down they are not enforced (logged); the denial-of-inventory cap lives in
Postgres and still holds. Per customer, the moving window of lua/rate_limit.lua (exact; its cost grows with
the limit, 5 a minute); per address, the sliding-window counter of lua/address_rate_limit.lua, O(1) at any
limit, since one address (a NAT, an office) may carry many customers and a high limit. The route finds the
address (entrypoints/api/client_address.py). Every refusal is counted by the limit that made it
(`ticketing_hold_rate_limited_total{limit}`): refusals by address while few by customer mean many customers behind one
address (a NAT, an office, a proxy not in TRUSTED_PROXIES), not one customer hammering.

The Lua scripts go in ONE network round trip (redis_script.run_together), and the requests for one showtime
that arrive in the same turn of the event loop (under load, many: the loop reads many sockets per turn) share
it (ticketing.batching): two rate-limit scripts per request (its customer's, its address's), then ONE gate
script run that takes their seats one request after the other. The waiting room's slot check rides in the
gate script: the room's keys share the showtime's hash slot (`wr:{42}:active` beside `seat:{42}:F5`).
Why not one script: the rate-limit keys are per customer and per address and the gate keys per showtime; one
script touching them all would break Redis Cluster (a script's keys must share a hash slot). No script
depends on another's result, so no MULTI.
The price: the gate script runs even when a limiter says no. Its keys are then released at once (a rare
extra round trip), and a refused customer (or address) is refused in-process until the limiter's
Retry-After passes, so a client hammering past its limit cannot keep seats gated through refused requests.
Postgres still decides every hold; this only filters.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from datetime import datetime
from typing import Any

from prometheus_client import Counter
from ticketing.batching import TickBatcher
from ticketing.logs import log_action

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import Call, LuaScript, run_together
from hold_service.adapters.seat_gate import GateAnswer, SeatGate
from hold_service.domain.waiting_room import AdmissionPass
from hold_service.service_layer.ports import Admission, Admitted, Ended, GateSeat

logger = logging.getLogger(__name__)
MAX_REMEMBERED = 10_000  # refused customers and addresses remembered per process
WINDOW_MS = 60_000  # the rate limits' window
REFUSED = Counter("ticketing_hold_rate_limited_total",
                  "Hold requests and queue joins refused, by the limit that refused them", ["limit"])
for _limit in ("customer", "address", "anonymous"):
    REFUSED.labels(_limit)  # exported at 0 from the start: "none refused" reads as 0, not as missing
Request = tuple[int, list[str], uuid.UUID, str | None, AdmissionPass | None]  # customer, seats, hold, address, slot
# The customer's limiter's wait in ms, the address's (0: admitted), the gate's answer, whether Redis lost the gate.
Answer = tuple[int, int, GateAnswer, bool]


class RateLimits:
    """The rate-limit scripts' calls; each answers the wait in ms (0: admitted)."""

    def __init__(self, guard: RedisGuard, per_minute: int, per_address_per_minute: int,
                 anonymous_per_address_per_minute: int = 10) -> None:
        self.per_minute, self.per_address_per_minute = per_minute, per_address_per_minute
        self.anonymous_per_address_per_minute = anonymous_per_address_per_minute
        self.script = LuaScript(guard.client, "rate_limit.lua")
        self.address_script = LuaScript(guard.client, "address_rate_limit.lua")

    def customer(self, customer_id: int) -> Call:
        return self.script, [f"ratelimit:holds:{customer_id}"], [self.per_minute, WINDOW_MS]

    def address(self, address: str) -> Call:
        return self.address_script, [f"ratelimit:address:{{{address}}}"], [self.per_address_per_minute, WINDOW_MS]

    def anonymous(self, address: str) -> Call:
        """Queue joins without a customer's token, by address: their own, lower, limit."""
        return self.address_script, [f"ratelimit:anonymous:{{{address}}}"], [self.anonymous_per_address_per_minute,
                                                                              WINDOW_MS]


class RedisAdmission(Admission):
    def __init__(self, guard: RedisGuard, limits: RateLimits, gate: SeatGate) -> None:
        self.guard, self.limits, self.gate = guard, limits, gate
        self._refused: dict[int | str, float] = {}  # customer or address -> monotonic time its refusal lasts to
        # Requests for one showtime arriving in the same loop turn share one round trip and gate script.
        self._batches: TickBatcher[tuple[int, int], Request, Answer] = TickBatcher(self._admit_many)

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        now = time.monotonic()
        if (wait := _longer(self._remembered(customer_id, now), self._remembered(address, now))) is not None:
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
            wait = _longer(self._refuse(customer_id, customer_ms, now), self._refuse(address, address_ms, now))
            return Admitted(wait, [])
        if isinstance(gate, int):
            return Admitted(None, [], slot_ended=True, gate_lost=lost)
        return Admitted(None, [seats[int(i) - 1] for i in gate], gate_lost=lost)

    async def address_wait(self, address: str, *, anonymous: bool = False) -> int | None:
        now, who = time.monotonic(), f"anonymous {address}" if anonymous else address
        if (wait := self._remembered(who, now)) is not None:
            return wait
        call = self.limits.anonymous(address) if anonymous else self.limits.address(address)
        got = await self.guard.call("ratelimit.address", self._run_together([call]))
        return self._refuse(who, int(got[0]), now) if got else None

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        await self.gate.release(showtime_id, seats, hold_id)

    async def release_holds(self, holds: list[Ended]) -> None:
        await self.gate.release_holds(holds)

    async def refill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        return await self.gate.fill(showtime_id, seats, mark_seconds)

    async def note(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        await self.gate.note(showtime_id, seats, hold_id, until)

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        await self.gate.keep(showtime_id, seats, hold_id, until)

    def _remembered(self, who: int | str | None, now: float) -> int | None:
        """Seconds `who` still waits after a refusal (counted again: it is refused again), or None."""
        if who is None or (until := self._refused.get(who)) is None:
            return None
        if now < until:
            count_refusal(who)
            return max(1, math.ceil(until - now))
        del self._refused[who]
        return None

    def _refuse(self, who: int | str | None, wait_ms: int, now: float) -> int | None:
        """Remember a refusal (`wait_ms` > 0) until it lapses; its Retry-After in seconds."""
        if who is None or not wait_ms:
            return None
        if len(self._refused) >= MAX_REMEMBERED:
            self._refused.pop(next(iter(self._refused)))  # the oldest entry
        self._refused[who] = now + wait_ms / 1000
        return log_refusal(who, wait_ms)

    async def _admit_many(self, batch: tuple[int, int], requests: list[Request]) -> list[Answer] | None:
        """The requests of one showtime that arrived in the same loop turn: each one's rate-limit scripts,
        then ONE gate script for all of them (taken in arrival order), in one round trip."""
        showtime_id, ttl_ms = batch
        calls = [self.limits.customer(customer) for customer, *_ in requests]
        calls += [self.limits.address(address) for *_, address, _ in requests if address is not None]
        gate = self.gate.call(showtime_id, ttl_ms, [(c, seats, hold, slot) for c, seats, hold, _, slot in requests])
        results = await self.guard.call("admission", self._run_together(calls + ([gate] if gate else [])))
        if results is None:
            return None
        customers, addresses = iter(results[:len(requests)]), iter(results[len(requests):len(calls)])
        gates, lost = self.gate.answers(results[-1] if gate else None, len(requests))
        return [(int(next(customers)), 0 if address is None else int(next(addresses)), answer, lost)
                for (*_, address, _), answer in zip(requests, gates, strict=True)]

    async def _run_together(self, calls: list[Call]) -> list[Any]:
        return await run_together(self.guard.client, calls)  # a method: a test counts the exchanges


def count_refusal(who: int | str) -> None:
    """One refusal by the customer's limit (`who` an id), the address's (`who` an address) or the anonymous
    joins' ("anonymous <address>")."""
    limit = "customer" if isinstance(who, int) else "anonymous" if who.startswith("anonymous ") else "address"
    REFUSED.labels(limit).inc()


def log_refusal(who: int | str, wait_ms: int) -> int:
    """The Retry-After in whole seconds (at least 1), logged and counted."""
    wait = max(1, math.ceil(wait_ms / 1000))
    count_refusal(who)
    if isinstance(who, int):
        log_action(logger, "hold.rate_limited", customer_id=who, retry_after=wait)
    else:
        log_action(logger, "hold.rate_limited", address=who, retry_after=wait)
    return wait


def _longer(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
