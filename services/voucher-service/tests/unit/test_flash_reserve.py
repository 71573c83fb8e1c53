"""Flash reserve decisions on fakes (real subclasses of the ports, no Mock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from ticketing.events import VoucherReserved
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.domain.errors import AlreadyUsed, GateUnavailable, NotEligible, OutOfStock
from voucher_service.domain.model import GateOrder, GateResult, Voucher
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.service_layer import flash
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.ports import FlashGate, Publisher
from voucher_service.service_layer.unit_of_work import UnitOfWork

NOW = datetime(2030, 1, 1, tzinfo=UTC)
VOUCHER = Voucher("FLASH", 700, 1000, 2, 0, 1, NOW - timedelta(hours=1), NOW + timedelta(hours=1), True)


class FakeGate(FlashGate):
    """The Lua scripts' semantics in memory."""

    def __init__(self, remaining: int) -> None:
        self.left, self.users, self.held = remaining, {}, {}  # type: ignore[var-annotated]
        self.calls, self.out_until = 0, False

    async def reserve(self, code: str, customer_id: int, per_user_limit: int, order_id: str,
                      order_amount: int) -> GateResult:
        self.calls += 1
        if order_id in self.held:
            state, cust = self.held[order_id]
            return GateResult.DUPLICATE if (state, cust) == ("R", customer_id) else GateResult.ORDER_TAKEN
        if self.users.get(customer_id, 0) >= per_user_limit:
            return GateResult.ALREADY_USED
        if self.left <= 0:
            return GateResult.OUT_OF_STOCK
        self.left -= 1
        self.users[customer_id] = self.users.get(customer_id, 0) + 1
        self.held[order_id] = ("R", customer_id)
        return GateResult.RESERVED

    async def release(self, code: str, order_id: str, *, forget: bool = False, retire: bool = False) -> int:
        state, cust = self.held.get(order_id, (None, 0))
        if state != "R":
            return -1 if state is None else 0
        if forget:
            del self.held[order_id]
        else:
            self.held[order_id] = ("X", cust)
        self.left += 0 if retire else 1
        self.users[cust] -= 1
        return 1

    async def order(self, code: str, order_id: str) -> GateOrder | None:
        return None

    async def orders(self, code: str) -> list[GateOrder]:
        return []

    async def remaining(self, code: str) -> int | None:
        return self.left

    async def record(self, code: str, mode: str, remaining: int, pairs: list[tuple[str, int]]) -> int:
        return 0

    def sold_out(self, code: str) -> bool:
        return self.out_until

    def mark_sold_out(self, code: str) -> None:
        self.out_until = True


class FakePublisher(Publisher):
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[VoucherReserved] = []
        self.fail = fail

    async def publish(self, event: VoucherReserved) -> None:
        if self.fail:
            raise TimeoutError("broker did not acknowledge")
        self.sent.append(event)


def ctx(gate: FakeGate, publisher: FakePublisher) -> Context:
    def no_db() -> UnitOfWork:
        raise AssertionError("flash reserve must not touch Postgres")
    return Context(uow=no_db, gate=gate, publisher=publisher, clock=lambda: NOW)


def cmd(customer: int, order: str) -> ReserveVoucher:
    return ReserveVoucher("FLASH", customer, order, 5000)


async def test_reserve_publishes_once_and_retry_is_read_your_writes() -> None:
    gate, pub = FakeGate(2), FakePublisher()
    first = await flash.reserve(cmd(1, "o1"), VOUCHER, ctx(gate, pub))
    again = await flash.reserve(cmd(1, "o1"), VOUCHER, ctx(gate, pub))
    assert first == again and first.discount_amount == 700
    assert [e.orderId for e in pub.sent] == ["o1"] and gate.left == 1
    with pytest.raises(AlreadyUsed):
        await flash.reserve(cmd(1, "o2"), VOUCHER, ctx(gate, pub))
    with pytest.raises(AlreadyUsed):  # another customer's order id
        await flash.reserve(cmd(2, "o1"), VOUCHER, ctx(gate, pub))


async def test_sold_out_cache_stops_requests_before_the_gate() -> None:
    gate, pub = FakeGate(0), FakePublisher()
    for n in range(5):
        with pytest.raises(OutOfStock):
            await flash.reserve(cmd(n, f"o{n}"), VOUCHER, ctx(gate, pub))
    assert gate.calls == 1


async def test_failed_send_forgets_the_use_and_answers_503() -> None:
    gate = FakeGate(1)
    with pytest.raises(GateUnavailable) as raised:
        await flash.reserve(cmd(1, "o1"), VOUCHER, ctx(gate, FakePublisher(fail=True)))
    assert to_api_error(raised.value).status == 503
    assert gate.left == 1 and "o1" not in gate.held
    pub = FakePublisher()
    await flash.reserve(cmd(1, "o1"), VOUCHER, ctx(gate, pub))  # the client's retry succeeds
    assert len(pub.sent) == 1 and gate.left == 0


def test_eligibility() -> None:
    VOUCHER.check_eligible(1000, NOW)
    with pytest.raises(NotEligible):
        VOUCHER.check_eligible(999, NOW)
    with pytest.raises(NotEligible):
        VOUCHER.check_eligible(5000, VOUCHER.ends_at)
    assert to_api_error(NotEligible("x")).code == "NOT_ELIGIBLE"


def test_gate_order_parse() -> None:
    assert GateOrder.parse("o", "R|42|5000|1700000000") == GateOrder("o", "R", 42, 5000, 1700000000)
