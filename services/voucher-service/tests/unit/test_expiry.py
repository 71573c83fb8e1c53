"""The expiry's rule and its questions to payment-service, on fakes."""

from __future__ import annotations

import asyncio

import pytest
from voucher_fakes import FakeGate, FakePayments, FakePublisher, fake_deps
from voucher_service.domain.errors import PaymentsUnavailable
from voucher_service.domain.model import may_expire
from voucher_service.service_layer import expiry


def test_only_a_payment_that_ended_unpaid_or_never_existed_lets_a_use_expire() -> None:
    assert [may_expire(s) for s in ("FAILED", "EXPIRED", "REFUNDED", None)] == [True] * 4
    assert [may_expire(s) for s in ("PENDING", "SUCCEEDED")] == [False, False]


class SlowPayments(FakePayments):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay, self.in_flight, self.most = delay, 0, 0

    async def status(self, payment_id: str) -> str | None:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        return await super().status(payment_id)


async def test_questions_are_bounded_and_any_silence_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    c = fake_deps(FakeGate(0), FakePublisher())
    with pytest.raises(PaymentsUnavailable):  # no client: the expiry releases nothing
        await expiry.payment_statuses(c, ["p1"])
    slow = SlowPayments(0.01)
    slow.statuses["p1"] = "SUCCEEDED"
    c.payments = slow
    ids = ["p1", *(f"p{n}" for n in range(2, 40)), "p1"]
    assert await expiry.payment_statuses(c, ids) == {"p1": "SUCCEEDED", **{f"p{n}": None for n in range(2, 40)}}
    assert slow.most == expiry.CONCURRENT_QUESTIONS and len(slow.asked) == 39  # each payment asked once
    c.payments = FakePayments(down=True)
    with pytest.raises(PaymentsUnavailable):
        await expiry.payment_statuses(c, ["p1", "p2"])
    monkeypatch.setattr(expiry, "QUESTIONS_BUDGET_SECONDS", 0.05)
    c.payments = SlowPayments(1.0)
    with pytest.raises(PaymentsUnavailable):
        await expiry.payment_statuses(c, ["p1"])
