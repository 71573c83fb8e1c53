"""Quotes on fakes: the reasons and their order, and a flash quote that never touches Postgres."""

from __future__ import annotations

from datetime import timedelta

import pytest
from voucher_fakes import NOW, VOUCHER, FakeGate, FakePublisher, fake_deps
from voucher_service.domain.commands import QuoteVoucher
from voucher_service.domain.errors import QuotesLimited
from voucher_service.domain.model import Quote
from voucher_service.service_layer.ports import QuoteLimit
from voucher_service.service_layer.quotes import quote_voucher


@pytest.mark.parametrize(("amount", "now", "remaining", "uses", "reason"), [
    (5000, NOW, 1, 0, None),
    (5000, VOUCHER.starts_at - timedelta(seconds=1), 1, 0, "INVALID"),  # not yet valid: as an unknown code
    (5000, VOUCHER.ends_at, 1, 0, "INVALID"),  # no longer valid: the same
    (999, NOW, 0, 1, "MIN_ORDER_AMOUNT"),  # the terms first
    (5000, NOW, 0, 1, "ALREADY_USED"),  # the caller's quota before the stock, as reserve checks
    (5000, NOW, 0, 0, "OUT_OF_STOCK"),
])
def test_reasons_in_the_order_reserve_checks(amount: int, now: object, remaining: int, uses: int,
                                             reason: str | None) -> None:
    quote = VOUCHER.quote(amount, now, remaining=remaining, customer_uses=uses)  # type: ignore[arg-type]
    assert quote == Quote("FLASH", reason is None, 700 if reason is None else 0, reason)  # type: ignore[arg-type]


async def test_a_flash_quote_reads_the_gate_and_reserves_nothing() -> None:
    gate = FakeGate(1)
    c = fake_deps(gate, FakePublisher())  # its unit of work fails the test if anything touches Postgres
    c.cache.put(VOUCHER)
    assert (await quote_voucher(QuoteVoucher("FLASH", 1, 5000), c)).eligible
    assert gate.left == 1 and gate.held == {} and gate.calls == 0
    await gate.reserve("FLASH", 1, 1, "pay-1", 5000)
    assert (await quote_voucher(QuoteVoucher("FLASH", 2, 5000), c)).reason == "OUT_OF_STOCK"
    assert (await quote_voucher(QuoteVoucher("FLASH", 1, 5000), c)).reason == "ALREADY_USED"
    gate.left = 4
    assert (await quote_voucher(QuoteVoucher("FLASH", 2, 5000), c)).eligible


class CountingLimit(QuoteLimit):
    def __init__(self, per_minute: int) -> None:
        self.per_minute, self.counts = per_minute, dict[int, int]()

    async def retry_after(self, customer_id: int) -> int | None:
        self.counts[customer_id] = self.counts.get(customer_id, 0) + 1
        return 42 if self.counts[customer_id] > self.per_minute else None


async def test_an_unknown_code_is_answered_as_an_invalid_one_and_quotes_are_counted_first() -> None:
    class NoSuchVoucher:  # the unit of work of an empty database
        async def __aenter__(self):  # type: ignore[no-untyped-def]
            return self

        async def __aexit__(self, *_: object) -> None:
            return None

        @property
        def vouchers(self):  # type: ignore[no-untyped-def]
            return self

        async def get(self, code: str) -> None:
            return None

    deps = fake_deps(FakeGate(1), FakePublisher())
    deps.uow = NoSuchVoucher  # type: ignore[assignment]
    deps.quote_limit = limit = CountingLimit(2)
    assert await quote_voucher(QuoteVoucher("GUESS1", 1, 5000), deps) == Quote("GUESS1", False, 0, "INVALID")
    deps.cache.put(VOUCHER)
    assert (await quote_voucher(QuoteVoucher("FLASH", 1, 5000), deps)).eligible
    with pytest.raises(QuotesLimited) as refused:
        await quote_voucher(QuoteVoucher("FLASH", 1, 5000), deps)  # a real code too: the limit comes first
    assert refused.value.retry_after == 42 and limit.counts == {1: 3}
    assert (await quote_voucher(QuoteVoucher("FLASH", 2, 5000), deps)).eligible  # another customer's own count
