"""`GET /vouchers/{code}/quote` (customer): would this voucher apply to my order now? Reserves nothing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from ticketing.api.security import Customer

from voucher_service.domain import commands
from voucher_service.domain.errors import VoucherError
from voucher_service.entrypoints.api.deps import DepsDep, VoucherCode
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.entrypoints.api.schemas import QuotePublic
from voucher_service.service_layer.quotes import quote_voucher

router = APIRouter(tags=["quotes"])
QUOTE_PATH = "/vouchers/{code}/quote"
OrderAmount = Annotated[int, Query(alias="orderAmount", ge=0, le=2**63 - 1, description="cents")]


@router.get(QUOTE_PATH, response_model=QuotePublic, name="quote_voucher",
            responses={429: {"headers": {"Retry-After": {"schema": {"type": "integer"}}}}})
async def quote(code: VoucherCode, order_amount: OrderAmount, principal: Customer, deps: DepsDep) -> QuotePublic:
    """The caller's own quota counts (ALREADY_USED); an unknown code answers as an invalid one (INVALID);
    bad orderAmount -> 422; past VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE quotes a minute -> 429."""
    try:
        found = await quote_voucher(commands.QuoteVoucher(code, principal.customer_id, order_amount), deps)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return QuotePublic(code=found.code, eligible=found.eligible, discountAmount=found.discount_amount,
                       reason=found.reason)
