"""Quotes on fakes: the reasons and their order, and a flash quote that never touches Postgres."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flash_fakes import NOW, VOUCHER, FakeGate, FakePublisher, fake_deps
from voucher_service.domain.commands import QuoteVoucher
from voucher_service.domain.model import Quote
from voucher_service.service_layer.quotes import quote_voucher


@pytest.mark.parametrize(("amount", "now", "remaining", "uses", "reason"), [
    (5000, NOW, 1, 0, None),
    (5000, VOUCHER.starts_at - timedelta(seconds=1), 1, 0, "NOT_STARTED"),
    (5000, VOUCHER.ends_at, 1, 0, "ENDED"),
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
