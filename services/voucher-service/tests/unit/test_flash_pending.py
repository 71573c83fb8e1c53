"""Issue 11 case 6 on fakes: a VoucherReserved send whose outcome is unknown never gives the use back at once."""

from __future__ import annotations

import asyncio

import pytest
from ticketing.events import VoucherReserved
from voucher_fakes import VOUCHER, FakeGate, FakePublisher, cmd, fake_deps
from voucher_service.domain.errors import AlreadyUsed, GateUnavailable, OutOfStock, SendRefused
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.service_layer import flash
from voucher_service.service_layer.flash_send import reserved_event


async def test_an_unknown_send_keeps_the_use_until_a_retry_is_acknowledged() -> None:
    gate = FakeGate(1)
    lost = FakePublisher(fail="unknown")  # queued, no ack: it may still land
    with pytest.raises(GateUnavailable) as raised:
        await flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, lost))
    error = to_api_error(raised.value)
    assert (error.status, error.code, error.headers) == (503, "UNAVAILABLE", {"Retry-After": "1"})
    assert gate.left == 0 and gate.held["pay-1"] == ("P", 1)  # still held: never handed out again
    with pytest.raises(OutOfStock):  # so nobody else gets a 201 past the limit meanwhile
        await flash.reserve(cmd(2, "pay-2"), VOUCHER, fake_deps(gate, FakePublisher()))
    acked = FakePublisher()
    assert (await flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, acked))).discount_amount == 700
    assert [e.eventId for e in acked.sent] == [reserved_event(cmd(1, "pay-1")).eventId]
    assert gate.held["pay-1"] == ("R", 1) and gate.left == 0


def test_every_send_of_an_order_carries_the_same_event_id() -> None:
    """So the writer's inbox (and ON CONFLICT (order_id)) absorb a copy sent by a retry."""
    first, again = reserved_event(cmd(1, "pay-1")), reserved_event(cmd(1, "pay-1"))
    assert first.eventId == again.eventId and isinstance(first, VoucherReserved)
    assert reserved_event(cmd(1, "pay-2")).eventId != first.eventId


class Paused(FakePublisher):
    """A first attempt's send that waits, then turns out never to have left."""

    def __init__(self) -> None:
        super().__init__(fail="refused")
        self.entered, self.go = asyncio.Event(), asyncio.Event()

    async def publish(self, event: VoucherReserved) -> None:
        self.entered.set()
        await self.go.wait()
        raise SendRefused("refused before it was queued")


async def test_a_refused_first_send_never_forgets_what_a_retry_sent_again() -> None:
    gate, first = FakeGate(1), Paused()
    attempt = asyncio.create_task(flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, first)))
    await first.entered.wait()  # reserved (P), sending
    with pytest.raises(GateUnavailable):  # the retry sends again; its outcome is unknown (a copy may land)
        await flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, FakePublisher(fail="unknown")))
    first.go.set()
    with pytest.raises(GateUnavailable):
        await attempt
    assert gate.held["pay-1"] == ("S", 1) and gate.left == 0  # not forgotten: the retry's copy may land
    with pytest.raises(AlreadyUsed):  # the customer's quota stays taken by it
        await flash.reserve(cmd(1, "pay-9"), VOUCHER, fake_deps(gate, FakePublisher()))


async def test_the_sold_out_cache_never_answers_a_retry_of_a_held_order() -> None:
    gate = FakeGate(1)
    with pytest.raises(GateUnavailable):
        await flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, FakePublisher(fail="unknown")))
    with pytest.raises(OutOfStock):  # the last use is held: this process caches "sold out"
        await flash.reserve(cmd(2, "pay-2"), VOUCHER, fake_deps(gate, FakePublisher()))
    assert gate.sold_out("FLASH")
    calls = gate.calls
    with pytest.raises(OutOfStock):  # a new order: answered from the cache, the reserve script untouched
        await flash.reserve(cmd(3, "pay-3"), VOUCHER, fake_deps(gate, FakePublisher()))
    assert gate.calls == calls
    assert (await flash.reserve(cmd(1, "pay-1"), VOUCHER, fake_deps(gate, FakePublisher()))).order_id == "pay-1"
