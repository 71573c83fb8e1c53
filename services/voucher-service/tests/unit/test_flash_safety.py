"""Flash-mode safety on fakes: no false 201 for a pending retry, Kafka not connected, gate recovery."""

from __future__ import annotations

import pytest
from voucher_fakes import VOUCHER, FakeGate, FakePublisher, cmd, fake_deps
from voucher_service.domain.errors import GateRecovering, GateUnavailable
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.service_layer import flash
from voucher_service.service_layer.ports import WriterLag
from voucher_service.service_layer.warmup import warm_up, writer_caught_up


class NotConnected(FakePublisher):
    @property
    def ready(self) -> bool:
        return False


class FakeLag(WriterLag):
    def __init__(self, end: int, committed: int) -> None:
        self.end, self.committed = end, committed

    async def end_offset(self, code: str) -> int:
        return self.end

    async def committed_offset(self, code: str) -> int:
        return self.committed


async def test_retry_while_first_send_pending_is_a_201_only_once_acknowledged() -> None:
    gate = FakeGate(2)
    gate.held["o1"] = ("P", 1)  # first attempt reserved, its Kafka send not acknowledged yet
    with pytest.raises(GateUnavailable):  # the retry's own send is not acknowledged either
        await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, FakePublisher(fail="unknown")))
    pub = FakePublisher()
    assert (await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, pub))).order_id == "o1"  # sent again, acked
    assert [e.orderId for e in pub.sent] == ["o1"] and gate.held["o1"] == ("R", 1) and gate.left == 2


async def test_published_reservation_is_marked_sent() -> None:
    gate = FakeGate(2)
    await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, FakePublisher()))
    assert gate.held["o1"] == ("R", 1)


async def test_the_201_does_not_wait_for_the_sent_mark() -> None:
    class SlowMarks(FakeGate):
        async def mark_sent(self, code: str, order_id: str) -> None:
            raise AssertionError("the request's path must not await the mark (note_sent posts it)")

    gate = SlowMarks(2)
    assert (await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, FakePublisher()))).order_id == "o1"
    assert gate.noted == ["o1"]


async def test_kafka_not_connected_answers_503_before_the_gate() -> None:
    gate = FakeGate(2)
    with pytest.raises(GateUnavailable) as raised:
        await flash.reserve(cmd(1, "o1"), VOUCHER, fake_deps(gate, NotConnected()))
    assert to_api_error(raised.value).status == 503 and gate.calls == 0 and gate.left == 2


async def test_gate_reopens_only_after_fence_and_writer_caught_up() -> None:
    lag = FakeLag(end=10, committed=4)
    c = fake_deps(FakeGate(0), FakePublisher())
    c.writer_lag, c.recovery_fence_seconds = lag, 0.0
    with pytest.raises(GateRecovering) as raised:
        await warm_up("FLASH", c)  # the writer is 6 messages behind: stay shut
    error = to_api_error(raised.value)
    assert error.status == 503 and error.headers == {"Retry-After": "2"}
    c.recoveries["FLASH"].checked = 0.0
    lag.end, lag.committed = 99, 10  # later messages do not matter: the mark was taken already
    assert await writer_caught_up("FLASH", c)


async def test_fence_and_missing_probe_keep_the_gate_shut() -> None:
    c = fake_deps(FakeGate(0), FakePublisher())
    assert not await writer_caught_up("FLASH", c)  # no probe: cannot know what is in flight
    c.writer_lag, c.recovery_fence_seconds = FakeLag(0, 0), 60.0
    assert not await writer_caught_up("FLASH", c)  # inside the fence even though nothing lags


async def test_an_old_recovery_is_never_reused_for_a_later_loss() -> None:
    c = fake_deps(FakeGate(0), FakePublisher())
    c.writer_lag, c.recovery_fence_seconds = FakeLag(end=5, committed=5), 0.0
    assert await writer_caught_up("FLASH", c)  # loss 1: caught up at offset 5
    old = c.recoveries["FLASH"]
    old.seen -= 60  # nobody asked for a minute (another process reloaded the gate), then loss 2
    c.writer_lag = FakeLag(end=9, committed=5)
    assert not await writer_caught_up("FLASH", c)  # a fresh mark (9), not the old one (5)
    assert c.recoveries["FLASH"] is not old and c.recoveries["FLASH"].mark == 9
    c2 = fake_deps(FakeGate(1), FakePublisher())
    c2.recoveries["FLASH"] = old
    await flash.reserve(cmd(1, "o1"), VOUCHER, c2)  # the gate answers: loaded, the recovery is over
    assert "FLASH" not in c2.recoveries
