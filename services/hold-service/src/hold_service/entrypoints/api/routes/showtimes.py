"""Admin showtime creation; the public seat map and its stream (both served ahead of FastAPI's routing)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from fastapi.sse import EventSourceResponse
from starlette.types import Scope
from ticketing.api.security import Admin

from hold_service.domain.errors import HoldError
from hold_service.domain.hall import from_price_cents
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api import hold_request
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.schemas import SeatMapPublic, ShowtimeCreate, ShowtimePublic
from hold_service.entrypoints.api.seat_map_stream import SeatMapStream
from hold_service.service_layer import showtimes
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.seat_map_ports import SeatMapView

router = APIRouter(tags=["showtimes"])
SEAT_MAP_PATH = "/showtimes/{showtime_id}/seats"
SEAT_MAP_STREAM_PATH = "/showtimes/{showtime_id}/seats/stream"
_SHOWTIME_PARAMETER = {"name": "showtime_id", "in": "path", "required": True,
                       "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SHOWTIME_ID}}
_IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}}
_STREAM_EVENTS = {"text/event-stream": {"schema": {  # each event, as OpenAPI 3.2 describes Server-Sent Events
    "type": "object", "required": ["event", "id", "data"],
    "properties": {"event": {"type": "string", "enum": ["snapshot", "change"]}, "id": {"type": "string"},
                   "retry": {"type": "integer"}, "data": {"type": "string"}}}}}


@router.post("/admin/showtimes", status_code=201, response_model=ShowtimePublic, name="create_showtime")
async def create_showtime(body: ShowtimeCreate, _: Admin, deps: DepsDep) -> ShowtimePublic:
    """A showtime and its hall: the full form (`layout` + `prices`, film, cinema, hall, time zone, duration) or
    the old one (`rows` + `priceCents`). 422 when a category the hall uses has no ADULT price."""
    cmd = body.command()
    try:
        count = await showtimes.create_showtime(cmd, deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return ShowtimePublic(showtimeId=body.showtimeId, title=body.title, startsAt=body.startsAt,
                          priceCents=from_price_cents(cmd.details.prices), seatCount=count,
                          prices=cmd.details.prices,  # type: ignore[arg-type]
                          currency=cmd.details.currency or deps.settings.currency)


@router.get(SEAT_MAP_PATH, response_model=SeatMapPublic, name="seat_map",
            responses={304: {"description": "If-None-Match named the current version"}, 404: {}, 422: {}},
            openapi_extra={"parameters": [_SHOWTIME_PARAMETER, _IF_NONE_MATCH]})
async def seat_map(request: Request) -> Response:
    """Public. From this process' memory, at most seconds stale; `ETag` is the version."""
    # The most requested thing the platform serves: a hot route (ticketing.api.hot_path), no token, no
    # body model, the JSON built once per version (adapters/seat_maps.py).
    sid, deps = _showtime(request)
    try:
        view = await showtimes.seat_map(sid, deps)
    except HoldError as exc:
        return api_error(exc).response()
    return seat_map_response(view, request.headers.get("if-none-match"), deps.settings.seat_map_cache_seconds)


@router.get(SEAT_MAP_STREAM_PATH, response_class=EventSourceResponse, name="seat_map_stream",
            responses={404: {}, 422: {}, 429: {"headers": {"Retry-After": {"schema": {"type": "integer"}}}}, 503: {}},
            openapi_extra={"parameters": [_SHOWTIME_PARAMETER], "responses": {"200": {"content": _STREAM_EVENTS}}})
async def seat_map_stream(request: Request) -> Response:
    """Public Server-Sent Events: `snapshot` (the seat map), then one `change` per version
    `{"version", "seats": [{"code", "status"}]}` in version order, and a `: heartbeat` comment every 15 s.
    At most SEAT_MAP_MAX_STREAMS_PER_ADDRESS streams at once per client address, then 429."""
    sid, deps = _showtime(request)
    try:
        subscription = await showtimes.follow_seat_map(sid, request.app.state.client_address.of(request), deps)
    except HoldError as exc:
        return api_error(exc).response()
    return SeatMapStream(subscription, sid)


def seat_map_in_memory(scope: Scope) -> bool:
    """Whether this process answers this seat-map request from memory, with no I/O (the shedder serves it
    then, at any load: cheaper than its 503)."""
    raw: str = scope["path"].split("/", 3)[2]
    deps: Deps = scope["app"].state.deps
    return raw.isascii() and raw.isdigit() and deps.seat_maps.cached(int(raw))


def _showtime(request: Request) -> tuple[int, Deps]:
    """The showtime of the path (422 when it is not one) and the handlers' Deps."""
    return hold_request.showtime_id(request), request.app.state.deps


def seat_map_response(view: SeatMapView, if_none_match: str | None, max_age: int = 0) -> Response:
    return etag_response(f'"{view.version}"', view.body, if_none_match, max_age)


def etag_response(etag: str, body: bytes, if_none_match: str | None, max_age: int = 0) -> Response:
    """A public JSON body: 304 when If-None-Match names it. Clients revalidate it every time (`no-cache`), or
    with `max_age` (SEAT_MAP_CACHE_SECONDS) a shared cache in front keeps it that long: at an opening a proxy or
    CDN then answers the crowd's repeated views, and the API sees one request per map per `max_age`."""
    headers = {"etag": etag, "cache-control": f"public, max-age={max_age}" if max_age else "no-cache"}
    if if_none_match is not None and _matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 weak comparison: `"17"`, `W/"17"`, a list of them, or `*`."""
    if if_none_match == etag:
        return True
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return etag in tags or "*" in tags
