"""`GET /vouchers/{code}/quote`: what a reservation would answer now, reserving and changing nothing.

An unknown code is answered as an invalid one (no existence oracle), and each customer's quotes are
counted (VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE), so codes cannot be found by asking.
"""

from __future__ import annotations

from voucher_service.domain import commands
from voucher_service.domain.errors import QuotesLimited, VoucherNotFound
from voucher_service.domain.model import Quote
from voucher_service.service_layer.ports import Deps
from voucher_service.service_layer.terms import voucher_terms


async def quote_voucher(cmd: commands.QuoteVoucher, deps: Deps) -> Quote:
    """Terms from the cached voucher; stock and the customer's quota from the flash gate where it is
    loaded (during a sale Postgres lags the gate, and its hot row is left alone), else from Postgres.
    Redis down for a flash voucher raises GateUnavailable (503), as its reservations do."""
    if deps.quote_limit is not None and (wait := await deps.quote_limit.retry_after(cmd.customer_id)):
        raise QuotesLimited(wait)
    try:
        voucher = await voucher_terms(cmd.code, deps)
    except VoucherNotFound:
        return Quote.invalid(cmd.code)
    now = deps.clock()
    if voucher.ineligibility(cmd.order_amount, now) is not None:  # the terms decide: no I/O
        return voucher.quote(cmd.order_amount, now, remaining=0, customer_uses=0)
    standing = await deps.gate.standing(cmd.code, cmd.customer_id) if voucher.flash_sale else None
    if standing is None:
        async with deps.uow() as uow:
            standing = await uow.vouchers.standing(cmd.code, cmd.customer_id)
        if standing is None:
            return Quote.invalid(cmd.code)
    remaining, customer_uses = standing
    return voucher.quote(cmd.order_amount, now, remaining=remaining, customer_uses=customer_uses)
