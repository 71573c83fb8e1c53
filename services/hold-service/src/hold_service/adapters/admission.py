"""Admission of a hold request: the per-customer rate limit, then the seat gate.

`RedisAdmission` sends both Lua scripts in ONE network round trip: a non-transactional pipeline of
EVALSHAs. And the requests for one showtime that arrive in the same turn of the event loop (under
load, many: the loop reads many sockets per turn) share that round trip: one rate-limit EVALSHA per
customer, then ONE gate script run that takes their seats one request after the other
(ticketing.batching). On the path most requests take under load (the gate answers 409) the Redis
client's per-call cost was the largest part of a worker's CPU after the framework (README, Benchmarks).
Why not one script: the rate-limit key is per customer and the gate keys per showtime
(`seat:{showtimeId}:...`); one script touching both would break Redis Cluster (a script's keys must
share a hash slot). Each script keeps its own keys in one slot; on a Cluster the two EVALSHAs would go
to their nodes through a cluster pipeline instead of `_pipelined` (one connection, one node).
MULTI is not needed: neither script depends on the other's result.
The price: the gate script runs even when the limiter says no. Its keys are then released at once
(a rare extra round trip), and a refused customer is refused in-process until the limiter's
Retry-After passes, so a client hammering past its limit cannot keep seats gated through refused
requests. Postgres still decides every hold; this only filters.
"""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

from redis.exceptions import NoScriptError, ResponseError
from ticketing.batching import TickBatcher

from hold_service.adapters.rate_limit import WINDOW_MS, RateLimiter, RedisRateLimiter, log_refusal
from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript
from hold_service.adapters.seat_gate import RedisSeatGate, SeatGate, seat_key
from hold_service.service_layer.ports import Admission

MAX_REMEMBERED = 10_000  # refused customers remembered per process
Request = tuple[int, list[str], uuid.UUID]  # customer, seats, hold id
Admitted = tuple[int, list[int]]  # the limiter's wait in ms (0: admitted), the gate's taken seat indexes


class SequentialAdmission(Admission):
    """The limiter, then the gate, one call after the other (the null gate: SEAT_GATE_ENABLED=false)."""

    def __init__(self, limiter: RateLimiter, gate: SeatGate) -> None:
        self.limiter, self.gate = limiter, gate

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float) -> tuple[int | None, list[str]]:
        wait = await self.limiter.retry_after(customer_id)
        if wait is not None:
            return wait, []
        return None, await self.gate.try_hold(showtime_id, seats, hold_id, ttl_seconds)

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        await self.gate.release(showtime_id, seats, hold_id)


class RedisAdmission(SequentialAdmission):
    def __init__(self, guard: RedisGuard, limiter: RedisRateLimiter, gate: RedisSeatGate) -> None:
        super().__init__(limiter, gate)
        self.guard, self.redis_limiter, self.redis_gate = guard, limiter, gate
        self._refused: dict[int, float] = {}  # customer -> monotonic time his refusal surely lasts to
        # Requests for one showtime arriving in the same loop turn share one round trip and gate script.
        self._batches: TickBatcher[tuple[int, int], Request, Admitted] = TickBatcher(self._admit_many)

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float) -> tuple[int | None, list[str]]:
        now = time.monotonic()
        until = self._refused.get(customer_id)
        if until is not None:
            if now < until:
                return max(1, math.ceil(until - now)), []
            del self._refused[customer_id]
        got = await self._batches.add((showtime_id, int(ttl_seconds * 1000)), (customer_id, seats, hold_id))
        if got is None:
            return None, []  # Redis unavailable: both fail open, as each did alone; Postgres decides
        wait_ms, taken = got
        if wait_ms:
            if not taken:  # the gate took the seats for a refused request: give them back now
                await self.gate.release(showtime_id, seats, hold_id)
            return self._refuse(customer_id, int(wait_ms), now), []
        return None, [seats[int(i) - 1] for i in taken]

    def _refuse(self, customer_id: int, wait_ms: int, now: float) -> int:
        if len(self._refused) >= MAX_REMEMBERED:
            self._refused.pop(next(iter(self._refused)))  # the oldest entry
        self._refused[customer_id] = now + wait_ms / 1000
        return log_refusal(customer_id, wait_ms)

    async def _admit_many(self, batch: tuple[int, int], requests: list[Request]) -> list[Admitted] | None:
        """The requests of one showtime that arrived in the same loop turn: each customer's rate-limit
        script, then ONE gate script for all of them (taken in arrival order), in one round trip."""
        showtime_id, ttl_ms = batch
        limit = self.redis_limiter
        rate = [([f"ratelimit:holds:{customer}"], [limit.per_minute, WINDOW_MS]) for customer, _, _ in requests]
        gate_keys = [seat_key(showtime_id, s) for _, seats, _ in requests for s in seats]
        gate_args: list[Any] = [ttl_ms]
        for _, seats, hold_id in requests:
            gate_args += [len(seats), str(hold_id)]
        calls = [*((limit.script, r) for r in rate), (self.redis_gate.try_hold_script, (gate_keys, gate_args))]
        results = await self.guard.call("admission", self._run(calls))
        if results is None:
            return None
        return list(zip(results[:-1], results[-1], strict=True))

    async def _run(self, calls: list[tuple[LuaScript, tuple[list[str], list[Any]]]]) -> list[Any]:
        results = await self._pipelined([("EVALSHA", s.sha, len(k), *k, *a) for s, (k, a) in calls])
        for i, (script, (keys, args)) in enumerate(calls):
            if isinstance(results[i], NoScriptError):  # a restarted or flushed Redis: that one did not run
                results[i] = await script(keys, args)  # loads it, runs it
            elif isinstance(results[i], Exception):
                raise results[i]
        return results

    async def _pipelined(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """The EVALSHAs in one round trip on one pooled connection, replies read in order; an error
        reply (NOSCRIPT) comes back as its exception, for the caller.

        Plain commands, not Script objects (a pipeline holding Script objects first checks and loads
        them, SCRIPT EXISTS, on every execute), and not redis-py's Pipeline either: its bookkeeping
        (retry wrapper, observability, reset) cost more per call than these few lines, on the path
        most requests take (README, Benchmarks).
        """
        pool = self.guard.client.connection_pool
        conn = await pool.get_connection()  # type: ignore[no-untyped-call]
        try:
            await conn.send_packed_command(conn.pack_commands(commands))
            results: list[Any] = []
            for _ in commands:
                try:
                    results.append(await conn.read_response())
                except ResponseError as exc:  # the reply was read whole: the connection stays usable
                    results.append(exc)
            return results
        except BaseException:
            await conn.disconnect()  # a reply may be left unread: never hand this socket out again
            raise
        finally:
            await pool.release(conn)
