"""Flash reserve decisions on fakes (real subclasses of the ports, no Mock)."""

from __future__ import annotations

import pytest
from voucher_fakes import NOW, VOUCHER, FakeGate, FakePublisher, cmd, fake_deps
from voucher_service.domain.errors import AlreadyUsed, GateUnavailable, NotEligible, OutOfStock
from voucher_service.domain.gate import GateOrder
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.service_layer import flash


async def test_reserve_publishes_once_and_retry_is_read_your_writes() -> None:
    gate, pub = FakeGate(2), FakePublisher()
    first = await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, pub))
    again = await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, pub))
    assert first == again and first.discount_amount == 700
    assert [e.orderId for e in pub.sent] == ["o1"] and gate.left == 1
    with pytest.raises(AlreadyUsed):
        await flash.reserve(cmd(1, "o2"), VOUCHER, fake_deps(gate, pub))
    with pytest.raises(AlreadyUsed):  # another customer's order id
        await flash.reserve(cmd(2, "o1"), VOUCHER, fake_deps(gate, pub))


async def test_sold_out_cache_stops_requests_before_the_gate() -> None:
    gate, pub = FakeGate(0), FakePublisher()
    for n in range(5):
        with pytest.raises(OutOfStock):
            await flash.reserve(cmd(n, f"o{n}"), VOUCHER, fake_deps(gate, pub))
    assert gate.calls == 1


async def test_a_send_that_never_left_forgets_the_use_and_answers_503() -> None:
    gate = FakeGate(1)
    with pytest.raises(GateUnavailable) as raised:
        await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, FakePublisher(fail="refused")))
    assert to_api_error(raised.value).status == 503
    assert gate.left == 1 and "o1" not in gate.held
    pub = FakePublisher()
    await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, pub))  # the client's retry succeeds
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
