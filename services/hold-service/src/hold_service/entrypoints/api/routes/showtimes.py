"""Admin showtime creation and the public seat map."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Path
from fastapi.responses import Response
from ticketing.api.security import Admin, AnyPrincipal

from hold_service.domain.commands import CreateShowtime
from hold_service.domain.errors import HoldError
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.schemas import SeatMapPublic, ShowtimeCreate, ShowtimePublic
from hold_service.service_layer import showtimes

router = APIRouter(tags=["showtimes"])


@router.post("/admin/showtimes", status_code=201, response_model=ShowtimePublic, name="create_showtime")
async def create_showtime(body: ShowtimeCreate, _: Admin, deps: DepsDep) -> ShowtimePublic:
    cmd = CreateShowtime(body.showtimeId, body.title, body.startsAt, body.priceCents, body.rows)
    try:
        count = await showtimes.create_showtime(cmd, deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return ShowtimePublic(showtimeId=body.showtimeId, title=body.title, startsAt=body.startsAt,
                          priceCents=body.priceCents, seatCount=count)


@router.get("/showtimes/{showtime_id}/seats", response_model=SeatMapPublic, name="seat_map")
async def seat_map(showtime_id: Annotated[int, Path(ge=1, le=MAX_SHOWTIME_ID)], _: AnyPrincipal,
                   deps: DepsDep) -> Response:
    try:
        found = await showtimes.seat_map(showtime_id, deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    # Served as stored: the cache holds the contract JSON already, no re-validation per read.
    return Response(orjson.dumps(found), media_type="application/json")
