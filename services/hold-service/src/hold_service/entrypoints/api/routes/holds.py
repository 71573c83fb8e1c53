"""Holds: take (with optional Idempotency-Key), read, cancel. Routes are thin."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse, Response
from ticketing.api.security import Customer, CustomerOrService

from hold_service.domain.errors import HoldError
from hold_service.domain.model import Hold, HoldSeats
from hold_service.entrypoints.api.deps import PortsDep
from hold_service.entrypoints.api.errors import api_error, error_body
from hold_service.entrypoints.api.schemas import HoldCreate, HoldCreated, HoldPublic
from hold_service.service_layer import holds
from hold_service.service_layer.idempotency import hold_seats_once

router = APIRouter(tags=["holds"])
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=200)]


def _render(outcome: Hold | HoldError) -> tuple[int, dict[str, Any]]:
    if isinstance(outcome, Hold):
        return 201, HoldCreated.of(outcome).model_dump(mode="json")
    return error_body(outcome)


@router.post("/showtimes/{showtime_id}/holds", status_code=201, response_model=HoldCreated,
             name="create_hold", responses={409: {}, 422: {}, 429: {}})
async def create_hold(showtime_id: int, body: HoldCreate, who: Customer, ports: PortsDep,
                      idempotency_key: IdempotencyKey = None) -> JSONResponse:
    cmd = HoldSeats(showtime_id=showtime_id, customer_id=who.customer_id, seats=body.seats,
                    idempotency_key=idempotency_key)
    try:
        status, payload = await hold_seats_once(cmd, ports, _render)
    except HoldError as exc:  # returned, not raised: a 409 is the common answer under load
        return api_error(exc).response()
    return JSONResponse(payload, status_code=status)


@router.get("/holds/{hold_id}", response_model=HoldPublic, name="get_hold")
async def get_hold(hold_id: uuid.UUID, who: CustomerOrService, ports: PortsDep) -> HoldPublic:
    customer = None if who.role == "service" else who.customer_id
    try:
        return HoldPublic.of(await holds.get_hold(hold_id, customer, ports))
    except HoldError as exc:
        raise api_error(exc) from exc


@router.delete("/holds/{hold_id}", status_code=204, name="cancel_hold", responses={404: {}, 409: {}})
async def cancel_hold(hold_id: uuid.UUID, who: Customer, ports: PortsDep) -> Response:
    try:
        await holds.cancel_hold(hold_id, who.customer_id, ports)
    except HoldError as exc:
        raise api_error(exc) from exc
    return Response(status_code=204)
