"""The waiting room: the operator's configuration and view, the customers' queue. Routes are thin.

Joining and polling are what tens of thousands of customers do at an opening, so they are served ahead of
FastAPI's routing like POST holds (why: hold_request.py), as `endpoint(request) -> Response`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response
from ticketing.api.errors import ApiError
from ticketing.api.security import Admin, current_principal, require_role
from ticketing.auth import Principal

from hold_service.domain.commands import ConfigureRoom, JoinQueue
from hold_service.domain.errors import HoldError, RoomNotFound
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.domain.waiting_room import QueueStatus, RoomConfig, RoomFigures, from_ms, is_visitor
from hold_service.entrypoints.api import hold_request
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.hold_request import json_response
from hold_service.entrypoints.api.room_schemas import (
    QueuePosition,
    QueueTicket,
    WaitingRoomAdmin,
    WaitingRoomStatus,
    WaitingRoomUpdate,
)
from hold_service.service_layer import room_rush, waiting_room
from hold_service.service_layer.ports import Deps

router = APIRouter(tags=["waiting room"])
_customer = require_role("customer")
ShowtimeId = Annotated[int, Path(ge=1, le=MAX_SHOWTIME_ID)]
JOIN_PATH, POLL_PATH = "/showtimes/{showtime_id}/queue", "/queue/{ticket}"
STATUS_PATH = "/showtimes/{showtime_id}/waiting-room"
MAX_TICKET = 512
_SHOWTIME_PARAM = {"name": "showtime_id", "in": "path", "required": True,
                   "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SHOWTIME_ID}}
_TICKET_PARAM = {"name": "ticket", "in": "path", "required": True,
                 "schema": {"type": "string", "minLength": 1, "maxLength": MAX_TICKET}}
# A customer's token, checked in the route (no FastAPI dependency on a hot route), so /docs says it here;
# optional (`{}`): a visitor not signed in joins and polls without one (docs/waiting-room.md).
_CUSTOMER: list[dict[str, list[str]]] = [{"bearer": []}, {}]


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat().replace("+00:00", "Z")


def _admin_view(config: RoomConfig, figures: RoomFigures | None, deps: Deps) -> WaitingRoomAdmin:
    f, thresholds = figures, config.thresholds(room_rush.defaults(deps.settings))
    return WaitingRoomAdmin(
        showtimeId=config.showtime_id, enabled=config.enabled, mode=config.mode, activeLimit=config.active_limit,
        opensAt=config.opens_at, openAtArrivalsPerMinute=thresholds.arrivals_per_minute,
        openAtActive=thresholds.active, changedReason=config.changed_reason, changedAt=config.changed_at,
        opened=f and f.opened, queueLength=f and f.queued, active=f and f.active,
        admittedTotal=f and f.admitted_total, admissionRatePerMinute=f and f.rate_per_minute,
        soldOut=f and f.sold_out, seatsAvailable=f and f.available, seatsHeld=f and f.held,
        pausedUntil=f and from_ms(f.paused_until_ms))


@router.put("/admin/showtimes/{showtime_id}/waiting-room", response_model=WaitingRoomAdmin,
            name="configure_waiting_room", responses={404: {}})
async def configure_waiting_room(showtime_id: ShowtimeId, body: WaitingRoomUpdate, _: Admin,
                                 deps: DepsDep) -> WaitingRoomAdmin:
    """Force the showtime's waiting room on or off (`mode` on / off, or the first form's `enabled`), or let it
    open itself at a rush and close after it (`mode` auto, with its thresholds); `opensAt` (optional) is when
    its queue starts moving. Turning it on or off writes WaitingRoomOpened / WaitingRoomClosed{OPERATOR}."""
    limit = body.activeLimit or deps.settings.waiting_room_auto_active_limit
    cmd = ConfigureRoom(showtime_id, bool(body.enabled), limit, body.opensAt, mode=body.mode,
                        open_at_arrivals=body.openAtArrivalsPerMinute, open_at_active=body.openAtActive)
    try:
        config = await waiting_room.configure_room(cmd, deps)
        return _admin_view(*await waiting_room.room_overview(config.showtime_id, deps), deps)
    except HoldError as exc:
        raise api_error(exc) from exc


@router.get("/admin/showtimes/{showtime_id}/waiting-room", response_model=WaitingRoomAdmin,
            name="waiting_room_admin", responses={404: {}})
async def waiting_room_admin(showtime_id: ShowtimeId, _: Admin, deps: DepsDep) -> WaitingRoomAdmin:
    """The configuration, the queue's length, who is choosing seats, the measured admission rate."""
    try:
        return _admin_view(*await waiting_room.room_overview(showtime_id, deps), deps)
    except HoldError as exc:
        raise api_error(exc) from exc


async def _anyone(request: Request) -> Principal | None:
    """The caller if a token came (a bad one is 401), None for a visitor without one."""
    return await current_principal(request) if _has_token(request) else None


@router.get(STATUS_PATH, response_model=WaitingRoomStatus, name="waiting_room",
            openapi_extra={"security": [{"bearer": []}, {}]})
async def waiting_room_status(showtime_id: ShowtimeId, who: Annotated[Principal | None, Depends(_anyone)],
                              deps: DepsDep) -> WaitingRoomStatus:
    """Whether customers go through the queue first (enabled false, also when there is no room, or it is off
    now); no token needed. The seat-map page asks once per visit: a customer's look counts as an arrival at the
    showtime, which may open its automatic room."""
    try:
        customer = who.customer_id if who is not None and who.role == "customer" else None
        config, figures = await waiting_room.room_for_page(showtime_id, customer, deps)
    except RoomNotFound:
        return WaitingRoomStatus(showtimeId=showtime_id, enabled=False, opensAt=None, soldOut=False)
    return WaitingRoomStatus(showtimeId=showtime_id, enabled=config.enabled, opensAt=config.opens_at,
                             soldOut=bool(figures and figures.sold_out))


@router.post(JOIN_PATH, status_code=202, response_model=QueueTicket, name="join_queue",
             responses={404: {}, 429: {}, 503: {}},
             openapi_extra={"security": _CUSTOMER, "parameters": [_SHOWTIME_PARAM]})
async def join_queue(request: Request) -> Response:
    """Join the showtime's queue (202); joining again gives the same ticket while it is live. Without a token:
    a visitor's ticket (a new one each time, joins limited per address), claimed at admission by signing in."""
    customer = (await _customer(request)).customer_id if _has_token(request) else None
    deps: Deps = request.app.state.deps
    cmd = JoinQueue(hold_request.showtime_id(request), customer, request.app.state.client_address.of(request))
    try:
        ticket, joined = await waiting_room.join_queue(cmd, deps)
    except HoldError as exc:
        return api_error(exc).response()
    return json_response(202, {"ticket": ticket, "position": joined.position, "soldOut": joined.sold_out,
                               "opensAt": _iso(joined.opens_at)})


@router.get(POLL_PATH, response_model=QueuePosition, name="queue_position", responses={404: {}, 503: {}},
            openapi_extra={"security": _CUSTOMER, "parameters": [_TICKET_PARAM]})
async def queue_position(request: Request) -> Response:
    """Where the ticket stands, or the admission token once admitted. Cheap: poll it every few seconds. A
    visitor's ticket needs no token until admitted (`signIn`); then a customer's token claims it, the first
    one for good (another customer's gets 404)."""
    ticket: str = request.path_params["ticket"]
    if len(ticket) > MAX_TICKET:
        raise ApiError(404, "NOT_FOUND", "no such ticket")
    deps: Deps = request.app.state.deps
    customer: int | None = None
    if _has_token(request) or not _visitors(ticket, deps):  # a customer's ticket: his token, as always
        customer = (await _customer(request)).customer_id
    try:
        status = await waiting_room.queue_status(ticket, customer, deps)
    except HoldError as exc:
        return api_error(exc).response()
    return json_response(200, _position(status))


def _has_token(request: Request) -> bool:
    return "authorization" in request.headers


def _visitors(text: str, deps: Deps) -> bool:
    ticket = deps.credentials.read_ticket(text)
    return ticket is not None and is_visitor(ticket.customer_id)


def _position(s: QueueStatus) -> dict[str, Any]:
    body = {"admitted": s.admitted, "position": s.position, "estimatedWaitSeconds": s.estimated_wait_seconds,
            "admissionToken": s.admission_token, "expiresAt": _iso(s.expires_at), "soldOut": s.sold_out,
            "opensAt": _iso(s.opens_at)}
    return {**body, "signIn": True} if s.sign_in else body  # a visitor admitted: sign in to claim it
