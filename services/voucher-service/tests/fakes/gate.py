"""FlashGate: the flash-mode Lua scripts of adapters/lua restated in memory (reserve, mark sent, release,
the order's state), held to them by tests/integration/test_contract_gate.py."""

from __future__ import annotations

from voucher_service.domain.gate import GateOrder, GateResult
from voucher_service.service_layer.gate_ports import FlashGate


class FakeGate(FlashGate):
    """The Lua scripts' semantics in memory."""

    def __init__(self, remaining: int) -> None:
        self.left, self.users, self.held = remaining, {}, {}  # type: ignore[var-annotated]
        self.calls, self.out_until = 0, False
        self.noted: list[str] = []  # orders marked sent without waiting (the request's path)

    async def reserve(self, code: str, customer_id: int, per_user_limit: int, order_id: str,
                      order_amount: int) -> GateResult:
        self.calls += 1
        if order_id in self.held:
            state, cust = self.held[order_id]
            if cust == customer_id and state == "R":
                return GateResult.DUPLICATE
            if cust == customer_id and state in ("P", "S"):
                self.held[order_id] = ("S", cust)  # a retry sends again: no longer forgettable
                return GateResult.PENDING
            return GateResult.ORDER_TAKEN
        if self.users.get(customer_id, 0) >= per_user_limit:
            return GateResult.ALREADY_USED
        if self.left <= 0:
            return GateResult.OUT_OF_STOCK
        self.left -= 1
        self.users[customer_id] = self.users.get(customer_id, 0) + 1
        self.held[order_id] = ("P", customer_id)
        return GateResult.RESERVED

    async def mark_sent(self, code: str, order_id: str) -> None:
        if self.held.get(order_id, ("", 0))[0] in ("P", "S"):
            self.held[order_id] = ("R", self.held[order_id][1])

    def note_sent(self, code: str, order_id: str) -> None:
        self.noted.append(order_id)
        if self.held.get(order_id, ("", 0))[0] in ("P", "S"):
            self.held[order_id] = ("R", self.held[order_id][1])

    async def release(self, code: str, order_id: str, *, forget: bool = False, retire: bool = False) -> int:
        state, cust = self.held.get(order_id, (None, 0))
        if state not in ("R", "P", "S") or (forget and state != "P"):
            return -1 if state is None else 0
        if forget:
            del self.held[order_id]
        else:
            self.held[order_id] = ("X", cust)
        self.left += 0 if retire else 1
        self.users[cust] -= 1
        return 1

    async def order(self, code: str, order_id: str) -> GateOrder | None:
        state, cust = self.held.get(order_id, (None, 0))
        return GateOrder(order_id, state, cust, 0, 0) if state else None

    async def orders(self, code: str) -> list[GateOrder]:
        return []

    async def holds(self, code: str, order_id: str, customer_id: int) -> bool:
        state, cust = self.held.get(order_id, (None, 0))
        return state in ("P", "S", "R") and cust == customer_id

    async def remaining(self, code: str) -> int | None:
        return self.left

    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        return self.left, self.users.get(customer_id, 0)

    async def record(self, code: str, mode: str, remaining: int, pairs: list[tuple[str, int]],
                     expire_at: int = 0) -> int:
        return 0

    def sold_out(self, code: str) -> bool:
        return self.out_until

    def mark_sold_out(self, code: str) -> None:
        self.out_until = True
