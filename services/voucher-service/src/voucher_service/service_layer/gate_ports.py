"""The flash-sale gate as the handlers see it (service_layer/flash.py, warmup.py, expiry.py): reservations
decided in Redis, before Postgres writes them. `Deps` carries it (service_layer/ports.py)."""

from __future__ import annotations

import abc

from voucher_service.domain.gate import GateOrder, GateResult


class FlashGate(abc.ABC):
    """The flash-sale decision point (Redis + Lua in production)."""

    @abc.abstractmethod
    async def reserve(self, code: str, customer_id: int, per_user_limit: int, order_id: str,
                      order_amount: int) -> GateResult: ...

    @abc.abstractmethod
    async def release(self, code: str, order_id: str, *, forget: bool = False, retire: bool = False) -> int:
        """1 given back (retire: marked released without giving back), 0 nothing done (already released,
        or a forget of an order a retry has sent again), -1 unknown."""

    @abc.abstractmethod
    async def order(self, code: str, order_id: str) -> GateOrder | None: ...

    @abc.abstractmethod
    async def orders(self, code: str) -> list[GateOrder]: ...

    @abc.abstractmethod
    async def remaining(self, code: str) -> int | None: ...

    @abc.abstractmethod
    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        """(uses left, the customer's held uses) in one round trip; None when the gate is not loaded."""

    @abc.abstractmethod
    async def mark_sent(self, code: str, order_id: str) -> None:
        """The order's VoucherReserved was acknowledged: pending (P) -> reserved (R)."""

    @abc.abstractmethod
    def note_sent(self, code: str, order_id: str) -> None:
        """`mark_sent` without waiting for it (the request's path): done soon after, or, if Redis fails
        meanwhile, by the reconciliation once Postgres has the use."""

    @abc.abstractmethod
    async def record(self, code: str, mode: str, remaining: int, pairs: list[tuple[str, int]],
                     expire_at: int = 0) -> int:
        """Run the adopt script (mode 'warm' | 'more' | 'adopt'); see lua/adopt.lua. expire_at (epoch
        seconds, 'warm' only) bounds the life of the voucher's keys."""

    @abc.abstractmethod
    async def holds(self, code: str, order_id: str, customer_id: int) -> bool:
        """Does the gate hold a use (pending or sent) for this order of this customer? The sold-out cache's
        check: a retry must get its own use's answer, never OUT_OF_STOCK."""

    # The per-process sold-out cache: answers OUT_OF_STOCK before the reserve script.
    @abc.abstractmethod
    def sold_out(self, code: str) -> bool: ...

    @abc.abstractmethod
    def mark_sold_out(self, code: str) -> None: ...
