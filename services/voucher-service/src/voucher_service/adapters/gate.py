"""The Redis flash-sale gate: Lua scripts on hash-tagged keys plus a per-process sold-out cache.

redis-py's Script objects run EVALSHA and fall back to EVAL (reloading) on NOSCRIPT, so a Redis
restart or SCRIPT FLUSH costs one extra round trip, not an error.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ticketing.batching import TickBatcher
from ticketing.logs import log_action
from ticketing.redis_client import REDIS_UNAVAILABLE, RedisClient, is_cluster

from voucher_service.adapters.sold_out import SoldOut
from voucher_service.domain.errors import GateUnavailable
from voucher_service.domain.gate import GateOrder, GateResult
from voucher_service.service_layer.gate_ports import FlashGate

_LUA = Path(__file__).resolve().parent / "lua"
logger = logging.getLogger(__name__)


T = TypeVar("T")
P = ParamSpec("P")


def _down_is_unavailable(
        method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Redis down, slow or failing over -> GateUnavailable (a clear 503 in flash mode; normal mode never calls it)."""
    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(*args, **kwargs)
        except REDIS_UNAVAILABLE as exc:
            raise GateUnavailable(f"the flash-sale gate (Redis) is unavailable: {exc}") from exc
    return wrapper


def keys(code: str) -> list[str]:
    prefix = f"voucher:{{{code}}}:"  # hash tag: the keys share one Cluster slot
    return [prefix + "remaining", prefix + "users", prefix + "orders"]


def node_key(code: str) -> str:
    """On a Redis Cluster: which node loaded the gate (lua/reserve.lua says why)."""
    return f"voucher:{{{code}}}:node"


class RedisFlashGate(FlashGate):
    def __init__(self, client: RedisClient, sold_out_ttl: float = 2.0) -> None:
        self.redis = client
        self._cluster = is_cluster(client)
        self._reserve = client.register_script((_LUA / "reserve.lua").read_text())
        self._release = client.register_script((_LUA / "release.lua").read_text())
        self._adopt = client.register_script((_LUA / "adopt.lua").read_text())
        self._sent = client.register_script((_LUA / "sent.lua").read_text())
        self._sold_out = SoldOut(sold_out_ttl)
        # Reservations of one voucher that arrive in the same loop turn: one script run for them all; and one
        # run per voucher at a time (serial): what arrives while a run is out waits for the next, so under
        # load the runs grow instead of multiplying (a Redis call is a write and a read on a socket, about a
        # tenth of a flash request's CPU each; docs/benchmarks.md). A request waits at most one run more.
        self._sent_marks: TickBatcher[str, str, None] = TickBatcher(self._mark_sent, serial=True)
        self._sent_notes: TickBatcher[str, str, None] = TickBatcher(self._note_sent, serial=True)
        self._reserves: TickBatcher[str, tuple[int, int, str, int], int] = TickBatcher(self._reserve_many,
                                                                                      serial=True)
        self._lookups: TickBatcher[str, str, GateOrder | None] = TickBatcher(self._orders_of, serial=True)

    async def reserve(self, code: str, customer_id: int, per_user_limit: int, order_id: str,
                      order_amount: int) -> GateResult:
        """One reservation; those of the same voucher arriving together share one script run, taken
        one after the other inside it (the same answers as separate runs in that order)."""
        answer = await self._reserves.add(code, (customer_id, per_user_limit, order_id, order_amount))
        assert answer is not None
        return GateResult(int(answer))

    @_down_is_unavailable
    async def _reserve_many(self, code: str, requests: list[tuple[int, int, str, int]]) -> list[int]:
        args: list[str | int] = [int(time.time())]
        for request in requests:
            args += request
        return [int(a) for a in await self._reserve(keys=self._script_keys(code), args=args)]

    @_down_is_unavailable
    async def release(self, code: str, order_id: str, *, forget: bool = False, retire: bool = False) -> int:
        if not forget:
            self._sold_out.forget(code)  # a use came back: let this process try again
        mode = "2" if retire else "1" if forget else "0"
        return int(await self._release(keys=keys(code), args=[order_id, mode]))

    @_down_is_unavailable
    async def order(self, code: str, order_id: str) -> GateOrder | None:
        raw = await self.redis.hget(keys(code)[2], order_id)  # type: ignore[misc]
        return GateOrder.parse(order_id, str(raw)) if raw else None

    async def holds(self, code: str, order_id: str, customer_id: int) -> bool:
        """Late requests after a sell-out arrive together: one HMGET per voucher per loop turn."""
        entry = await self._lookups.add(code, order_id)
        return entry is not None and entry.held and entry.customer_id == customer_id

    @_down_is_unavailable
    async def _orders_of(self, code: str, order_ids: list[str]) -> list[GateOrder | None]:
        raw = await self.redis.hmget(keys(code)[2], order_ids)  # type: ignore[misc]
        return [GateOrder.parse(o, str(r)) if r else None for o, r in zip(order_ids, raw, strict=True)]

    @_down_is_unavailable
    async def orders(self, code: str) -> list[GateOrder]:
        raw = await self.redis.hgetall(keys(code)[2])  # type: ignore[misc]
        return [GateOrder.parse(str(k), str(v)) for k, v in raw.items()]

    @_down_is_unavailable
    async def remaining(self, code: str) -> int | None:
        value = await self.redis.get(keys(code)[0])
        return int(value) if value is not None else None

    @_down_is_unavailable
    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        remaining, users, _ = keys(code)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(remaining)
            pipe.hget(users, str(customer_id))
            left, held = await pipe.execute()
        return None if left is None else (int(left), int(held or 0))

    async def mark_sent(self, code: str, order_id: str) -> None:
        """Joins the marks of every order acknowledged meanwhile: one script run per voucher per batch.

        The broker acknowledges a whole batch of VoucherReserved at once, so their requests resume
        together; one EVALSHA each was a noticeable share of a flash request's CPU (docs/benchmarks.md).
        """
        await self._sent_marks.add(code, order_id)

    @_down_is_unavailable
    async def _mark_sent(self, code: str, order_ids: list[str]) -> None:
        await self._sent(keys=keys(code), args=order_ids)

    def note_sent(self, code: str, order_id: str) -> None:
        """`mark_sent` off the request's path: the 201 need not wait for it (flash_send.py says why), and a
        flash request saves the two turns of a busy event loop that awaiting the script run costs."""
        self._sent_notes.post(code, order_id)

    async def _note_sent(self, code: str, order_ids: list[str]) -> None:
        try:
            await self._mark_sent(code, order_ids)
        except GateUnavailable as exc:  # the uses are real (Kafka has them); the reconciliation marks them
            log_action(logger, "voucher.gate_mark_sent_failed", str(exc), level=logging.WARNING, code=code,
                       orders=len(order_ids))

    @_down_is_unavailable
    async def record(self, code: str, mode: str, remaining: int, pairs: list[tuple[str, int]],
                     expire_at: int = 0) -> int:
        args: list[str | int] = [mode, remaining, expire_at]
        for order_id, customer_id in pairs:
            args += [order_id, customer_id]
        return int(await self._adopt(keys=self._script_keys(code), args=args))

    def _script_keys(self, code: str) -> list[str]:
        return [*keys(code), node_key(code)] if self._cluster else keys(code)

    def sold_out(self, code: str) -> bool:
        return code in self._sold_out

    def mark_sold_out(self, code: str) -> None:
        self._sold_out.mark(code)
