"""What's on (public, served ahead of FastAPI's routing like the seat map) and a customer's bookings."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime

import qrcode
import qrcode.constants
from fastapi import APIRouter, Request
from fastapi.responses import Response
from qrcode.image.svg import SvgPathImage
from ticketing.api.errors import ApiError
from ticketing.api.security import Customer

from hold_service.domain.catalogue import CatalogueQuery, parse_cursor
from hold_service.domain.errors import HoldError
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.listings import BookingList, BookingPublic, ShowtimeList
from hold_service.entrypoints.api.routes.showtimes import etag_response
from hold_service.service_layer import catalogue

router = APIRouter(tags=["showtimes"])
_SPAN_OF_YEARS = (1970, 9998)  # a question about showtimes; and far from datetime's limits once offsets apply
CATALOGUE_PATH = catalogue.PATH  # its answers name their next page by it
_PARAMETERS = [
    {"name": "from", "in": "query", "required": False, "schema": {"type": "string", "format": "date-time"},
     "description": "Showtimes starting at or after this time (with its offset); default: now."},
    {"name": "to", "in": "query", "required": False, "schema": {"type": "string", "format": "date-time"},
     "description": "Showtimes starting before this time; default: a week after `from` (at most 62 days)."},
    {"name": "cinema", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 200}},
    {"name": "after", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 60},
     "description": "Only the showtimes listed after this one: the answer's `next` carries it."},
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}},
]


@router.get(CATALOGUE_PATH, response_model=ShowtimeList, name="list_showtimes",
            responses={304: {"description": "If-None-Match named the current answer"}, 422: {}},
            openapi_extra={"parameters": _PARAMETERS})
async def list_showtimes(request: Request) -> Response:
    """Public: the showtimes by start, each ON_SALE, SOLD_OUT, CLOSED or CANCELLED with its seats available
    and its lowest price, CATALOGUE_PAGE_SIZE at most; `next`, when more follow, is the address of the rest.
    An API process keeps each answer CATALOGUE_CACHE_SECONDS; `ETag` names the body."""
    params = request.query_params
    try:
        cinema = params.get("cinema")
        if cinema is not None and len(cinema) > 200:
            raise _invalid("cinema", "String should have at most 200 characters")
        if cinema is not None and not cinema.isprintable():
            raise _invalid("cinema", "String should not contain control characters")
        query = CatalogueQuery.of(datetime.now(UTC), _time(params.get("from"), "from"), _time(params.get("to"), "to"),
                                  cinema, _after(params.get("after")))
        page = await catalogue.whats_on(query, request.app.state.deps)
    except HoldError as exc:
        return api_error(exc).response()
    except ApiError as exc:
        return exc.response()
    return etag_response(page.etag, page.body, request.headers.get("if-none-match"))


def _time(raw: str | None, name: str) -> datetime | None:
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise _invalid(name, "Input should be an ISO-8601 date-time") from None
    return _in_span(moment, name)


def _in_span(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None:
        raise _invalid(name, "Input should have a timezone offset")
    if not _SPAN_OF_YEARS[0] <= moment.year <= _SPAN_OF_YEARS[1]:
        raise _invalid(name, f"Input should be between the years {_SPAN_OF_YEARS[0]} and {_SPAN_OF_YEARS[1]}")
    return moment.astimezone(UTC)


def _after(raw: str | None) -> tuple[datetime, int] | None:
    if raw is None:
        return None
    try:
        moment, showtime_id = parse_cursor(raw)
    except ValueError:
        raise _invalid("after", "Input should be the `after` of an answer's `next`") from None
    return _in_span(moment, "after"), showtime_id


def _invalid(name: str, msg: str) -> ApiError:
    return ApiError(422, "VALIDATION_ERROR", "request is not valid", problems=[{"loc": ["query", name], "msg": msg}])


@router.get("/bookings/{booking_id}/qr", name="booking_qr", response_class=Response,
            responses={200: {"content": {"image/svg+xml": {}}}, 404: {}})
async def booking_qr(booking_id: uuid.UUID, who: Customer, deps: DepsDep) -> Response:
    """The owner's BOOKED booking's ticket as a QR code (SVG): the signed text GET /bookings gives."""
    try:
        ticket = await catalogue.booked_ticket(booking_id, who.customer_id, deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    out = io.BytesIO()
    qrcode.make(ticket, image_factory=SvgPathImage, error_correction=qrcode.constants.ERROR_CORRECT_M).save(out)
    return Response(out.getvalue(), media_type="image/svg+xml", headers={"cache-control": "private, no-store"})


@router.get("/bookings", response_model=BookingList, name="my_bookings")
async def my_bookings(who: Customer, deps: DepsDep) -> BookingList:
    """The signed-in customer's own bookings, newest first; a BOOKED one carries its signed ticket (the text
    its e-mail's QR code holds)."""
    views = await catalogue.my_bookings(who.customer_id, deps)
    return BookingList(bookings=[BookingPublic.of(v, catalogue.ticket_of(v, deps)) for v in views])
