"""FastAPI dependencies: the handlers' `Deps` (on app.state, set by the lifespan) and the caller checks."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from ticketing.api.errors import not_found
from ticketing.api.security import current_principal
from ticketing.auth import Principal

from voucher_service.entrypoints.api.schemas import CODE_PATTERN, ORDER_ID_PATTERN
from voucher_service.service_layer.ports import Deps


async def get_deps(request: Request) -> Deps:
    deps: Deps = request.app.state.deps
    return deps


DepsDep = Annotated[Deps, Depends(get_deps)]


async def payment_service(request: Request) -> Principal:
    """Reservations are made, confirmed and released by payment-service only (role service): a customer
    could otherwise give back the use his payment already took. Any other valid token gets 404, as if
    the route did not exist (no oracle telling which vouchers or orders exist); no token is still 401."""
    principal = await current_principal(request)
    if principal.role != "service":
        raise not_found("voucher reservation")
    return principal


PaymentService = Annotated[Principal, Depends(payment_service)]
VoucherCode = Annotated[str, Path(pattern=CODE_PATTERN)]
OrderId = Annotated[str, Path(pattern=ORDER_ID_PATTERN)]
