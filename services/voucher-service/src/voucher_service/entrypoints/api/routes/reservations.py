"""Reserve / confirm / release, for payment-service only (thin: check the caller, validate, build the
command, call the handler, map errors). The voucher orderId is the paymentId: one reservation per payment
attempt (docs/events)."""

from __future__ import annotations

import re
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError
from ticketing.api.errors import ApiError

from voucher_service.domain import commands
from voucher_service.domain.errors import ReservationNotFound, VoucherError
from voucher_service.entrypoints.api.deps import DepsDep, OrderId, PaymentService, VoucherCode, payment_service
from voucher_service.entrypoints.api.errors import to_api_error
from voucher_service.entrypoints.api.schemas import CODE_PATTERN, ReservationCreate, ReservationPublic
from voucher_service.service_layer import handlers

router = APIRouter(tags=["reservations"])


RESERVE_PATH = "/vouchers/{code}/reservations"
CONFIRM_PATH = "/vouchers/{code}/reservations/{order_id}/confirm"
RELEASE_PATH = "/vouchers/{code}/reservations/{order_id}"
_CODE = re.compile(CODE_PATTERN)
RESERVE_OPENAPI: dict[str, Any] = {
    "security": [{"bearer": []}],  # payment-service's token (checked in the route, no FastAPI dependency)
    "parameters": [{"name": "code", "in": "path", "required": True,
                    "schema": {"type": "string", "pattern": CODE_PATTERN}}],
    "requestBody": {"required": True,
                    "content": {"application/json": {"schema": ReservationCreate.model_json_schema()}}},
}


@router.post(RESERVE_PATH, status_code=201, response_model=ReservationPublic, name="reserve_voucher",
             openapi_extra=RESERVE_OPENAPI)
async def reserve(request: Request) -> Response:
    """Reserve one use of the voucher for a payment attempt (idempotent by orderId = paymentId).

    The hot path of a flash sale, served ahead of FastAPI's routing (ticketing.api.hot_path): the
    caller check, the path and the body are validated here, with the contract's 422 body. The caller
    is checked first, so a customer learns nothing from a 422 either.
    """
    await payment_service(request)
    body = _reservation(request.path_params["code"], await request.body())
    cmd = commands.ReserveVoucher(request.path_params["code"], body.customerId, body.orderId, body.orderAmount)
    try:
        reservation = await handlers.reserve_voucher(cmd, request.app.state.deps)
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    body_bytes = orjson.dumps({"orderId": reservation.order_id, "discountAmount": reservation.discount_amount})
    return Response(body_bytes, status_code=201, media_type="application/json")


def _reservation(code: str, raw: bytes) -> ReservationCreate:
    """The body as FastAPI would validate it, with the path code; every problem in one 422."""
    problems: list[dict[str, Any]] = []
    if not _CODE.match(code):
        problems.append({"loc": ["path", "code"], "msg": f"String should match pattern '{CODE_PATTERN}'"})
    try:
        body = ReservationCreate.model_validate_json(raw)
    except ValidationError as exc:
        problems += [{"loc": ["body", *e["loc"]], "msg": e["msg"]} for e in exc.errors()]
    if problems:
        raise ApiError(422, "VALIDATION_ERROR", "request is not valid", problems=problems)
    return body


@router.post(CONFIRM_PATH, name="confirm_reservation")
async def confirm(code: VoucherCode, order_id: OrderId, _: PaymentService, deps: DepsDep) -> dict[str, str]:
    try:
        if not await handlers.confirm_reservation(commands.ConfirmReservation(order_id, code), deps):
            raise ReservationNotFound(f"reservation {order_id} of voucher {code} not found")
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return {"orderId": order_id, "status": "CONFIRMED"}


@router.delete(RELEASE_PATH, status_code=204, name="release_reservation")
async def release(code: VoucherCode, order_id: OrderId, _: PaymentService, deps: DepsDep) -> Response:
    try:
        if not await handlers.release_reservation(commands.ReleaseReservation(order_id, code), deps):
            raise ReservationNotFound(f"reservation {order_id} of voucher {code} not found")
    except VoucherError as exc:
        raise to_api_error(exc) from exc
    return Response(status_code=204)
