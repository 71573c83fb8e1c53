"""Reserve / confirm / release (thin: validate, build the command, call the handler, map errors)."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Response
from ticketing.api.security import CustomerOrService

from voucher_service.domain import commands
from voucher_service.domain.errors import ReservationNotFound, VoucherError
from voucher_service.entrypoints.api.deps import Ctx, OrderId, VoucherCode, ensure_may_act_for
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.entrypoints.api.schemas import ReservationCreate, ReservationPublic
from voucher_service.service_layer import handlers

router = APIRouter(tags=["reservations"])


@router.post("/vouchers/{code}/reservations", status_code=201, response_model=ReservationPublic,
             name="reserve_voucher")
async def reserve(code: VoucherCode, body: ReservationCreate, principal: CustomerOrService,
                  ctx: Ctx) -> Response:
    ensure_may_act_for(principal, body.customerId)
    cmd = commands.ReserveVoucher(code, body.customerId, body.orderId, body.orderAmount)
    try:
        reservation = await handlers.reserve_voucher(cmd, ctx)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    # The hot path of a flash sale: the body is encoded directly (response_model documents it; returning
    # a Response skips FastAPI's re-validation of the result).
    body_bytes = orjson.dumps({"orderId": reservation.order_id, "discountAmount": reservation.discount_amount})
    return Response(body_bytes, status_code=201, media_type="application/json")


async def _owner_check(code: VoucherCode, order_id: OrderId, principal: CustomerOrService, ctx: Ctx) -> None:
    """Customers may confirm or release only their own reservation (else 404). In flash mode the row
    may not be written yet, so the gate's orders hash answers for it."""
    if principal.role == "service":
        return
    async with ctx.uow() as uow:
        found = await uow.vouchers.redemption(order_id)
    owner = found.customer_id if found and found.voucher_code == code else None
    if found is None and ctx.gate is not None:
        try:
            entry = await ctx.gate.order(code, order_id)
        except VoucherError:
            entry = None
        owner = entry.customer_id if entry else None
    ensure_may_act_for(principal, owner)


@router.post("/vouchers/{code}/reservations/{order_id}/confirm", name="confirm_reservation")
async def confirm(code: VoucherCode, order_id: OrderId, principal: CustomerOrService, ctx: Ctx) -> dict[str, str]:
    await _owner_check(code, order_id, principal, ctx)
    try:
        if not await handlers.confirm_reservation(commands.ConfirmReservation(order_id, code), ctx):
            raise ReservationNotFound(f"reservation {order_id} of voucher {code} not found")
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return {"orderId": order_id, "status": "CONFIRMED"}


@router.delete("/vouchers/{code}/reservations/{order_id}", status_code=204, name="release_reservation")
async def release(code: VoucherCode, order_id: OrderId, principal: CustomerOrService, ctx: Ctx) -> Response:
    await _owner_check(code, order_id, principal, ctx)
    try:
        if not await handlers.release_reservation(commands.ReleaseReservation(order_id, code), ctx):
            raise ReservationNotFound(f"reservation {order_id} of voucher {code} not found")
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return Response(status_code=204)
