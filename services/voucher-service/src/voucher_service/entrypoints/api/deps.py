"""FastAPI dependencies: the Context built at startup, the caller's identity, the caller check."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from ticketing.api.errors import not_found
from ticketing.auth import Principal

from voucher_service.entrypoints.api.schemas import CODE_PATTERN, ORDER_ID_PATTERN
from voucher_service.service_layer.context import Context


async def get_context(request: Request) -> Context:
    ctx: Context = request.app.state.ctx
    return ctx


Ctx = Annotated[Context, Depends(get_context)]


def ensure_may_act_for(principal: Principal, customer_id: int | None) -> None:
    """A service acts for anyone; a customer only for himself. Someone else's reservation answers 404
    (never 403: no oracle telling which vouchers or orders exist)."""
    if principal.role == "service":
        return
    if customer_id is None or principal.customer_id != customer_id:
        raise not_found("voucher reservation")


VoucherCode = Annotated[str, Path(pattern=CODE_PATTERN)]
OrderId = Annotated[str, Path(pattern=ORDER_ID_PATTERN)]
