"""Holds: take (with optional Idempotency-Key), read, extend (payment-service at checkout), cancel. Routes
are thin."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from ticketing.api.security import Customer, CustomerOrService, require_role
from ticketing.auth import Principal

from hold_service.domain.commands import CancelHold, ExtendHold
from hold_service.domain.errors import HoldError
from hold_service.domain.model import HoldSeats
from hold_service.entrypoints.api import hold_request
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.hold_request import HOLD_OPENAPI, json_response
from hold_service.entrypoints.api.schemas import HoldCreated, HoldExtend, HoldExtended, HoldPublic
from hold_service.service_layer import holds, lifecycle
from hold_service.service_layer.ports import Deps

router = APIRouter(tags=["holds"])
_customer = require_role("customer")  # the shared check (app.state.tokens, cached), called directly
Service = Annotated[Principal, Depends(require_role("service"))]  # another service of ours (payment-service)
CREATE_HOLD_PATH = "/showtimes/{showtime_id}/holds"
HOLD_PATH, EXTEND_PATH = "/holds/{hold_id}", "/holds/{hold_id}/extend"


@router.post(CREATE_HOLD_PATH, status_code=201, response_model=HoldCreated,
             name="create_hold", responses={403: {}, 409: {}, 422: {}, 429: {}}, openapi_extra=HOLD_OPENAPI)
async def create_hold(request: Request) -> Response:
    """Hold 1-8 distinct seats of the showtime, all or nothing, until the hold expires. Each seat is a code
    (an ADULT ticket) or `{"code", "ticketType"}`; the amount is computed here from the showtime's prices.
    Or best available, `{"best": {"count": 2, "category": "STANDARD"}}`: the platform chooses that many seats
    side by side in one row, best first (409 SEATS_UNAVAILABLE with `"together": false` when none are).
    Under the showtime's no-lone-seat rule, picked seats that would strand a free seat: 409 LONE_SEAT with
    `suggested` seats."""
    # The hot path: served ahead of FastAPI's routing (ticketing.api.hot_path), so no body model and
    # no FastAPI dependencies (why: hold_request.py); same contract either way.
    who = await _customer(request)  # 401/403 before any 422, as with FastAPI's dependency order
    sid, key = hold_request.showtime_id(request), hold_request.idempotency_key(request)
    deps: Deps = request.app.state.deps
    codes, ticket_types, best = await hold_request.seats(request)
    cmd = HoldSeats(showtime_id=sid, customer_id=who.customer_id, seats=codes, ticket_types=ticket_types, best=best,
                    idempotency_key=key, address=request.app.state.client_address.of(request),
                    admission_token=request.headers.get("x-admission-token"))
    try:
        hold = await holds.hold_seats(cmd, deps)
    except HoldError as exc:  # returned, not raised: a 409 is the common answer under load
        return api_error(exc).response()
    return json_response(201, HoldCreated.of(hold).model_dump(mode="json"))


@router.get(HOLD_PATH, response_model=HoldPublic, name="get_hold")
async def get_hold(hold_id: uuid.UUID, who: CustomerOrService, deps: DepsDep) -> HoldPublic:
    customer = None if who.role == "service" else who.customer_id
    try:
        return HoldPublic.of(await holds.get_hold(hold_id, customer, deps))
    except HoldError as exc:
        raise api_error(exc) from exc


@router.post(EXTEND_PATH, response_model=HoldExtended, name="extend_hold",
             responses={404: {}, 409: {}, 422: {}})
async def extend_hold(hold_id: uuid.UUID, body: HoldExtend, _caller: Service, deps: DepsDep) -> HoldExtended:
    """payment-service at checkout: the hold's expiry becomes max(its expiry, until), never later than its
    creation + HOLD_MAX_SECONDS (HoldExtended on booking-events when it moved); idempotent. 409
    HOLD_NOT_ACTIVE unless the hold is HELD and live (a released or expired hold is never revived)."""
    try:
        expires = await lifecycle.extend_hold(ExtendHold(hold_id, body.until, body.customerId), deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return HoldExtended(expiresAt=expires)


@router.delete("/holds/{hold_id}", status_code=204, name="cancel_hold", responses={404: {}, 409: {}})
async def cancel_hold(hold_id: uuid.UUID, who: Customer, deps: DepsDep) -> Response:
    try:
        await holds.cancel_hold(CancelHold(hold_id, who.customer_id), deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return Response(status_code=204)
