"""POST /showtimes/{id}/holds without per-request pydantic models or FastAPI dependency resolution.

Most requests under load are answered 409 by the Redis gate in well under a millisecond of I/O, so
framework work dominates their cost: FastAPI's body model, dependency solving and response class
(docs/benchmarks.md has the figures). This module reads the raw body with orjson,
checks its shape by hand (the seat rules themselves stay in the domain: `requested_seats`) and keeps
the contract's 422 body (`VALIDATION_ERROR` + `problems`). `HOLD_OPENAPI` keeps /docs describing it.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response
from pydantic import ValidationError
from ticketing.api.errors import ApiError

from hold_service.domain.model import MAX_SHOWTIME_ID, BestSeats
from hold_service.entrypoints.api.schemas import BestRequest, HoldCreate

MAX_LISTED_SEATS = 64  # longer lists are refused before the domain looks at them (as HoldCreate did)

HOLD_OPENAPI: dict[str, Any] = {
    "security": [{"bearer": []}],  # a customer's token (checked in the route, no FastAPI dependency)
    "parameters": [
        {"name": "showtime_id", "in": "path", "required": True,
         "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SHOWTIME_ID}},
        {"name": "Idempotency-Key", "in": "header", "required": False,
         "schema": {"type": "string", "minLength": 1, "maxLength": 200}},
        # Required while the showtime's waiting room is on (else 403 ADMISSION_REQUIRED): GET /queue/{ticket}.
        {"name": "X-Admission-Token", "in": "header", "required": False, "schema": {"type": "string"}},
    ],
    "requestBody": {"required": True,
                    "content": {"application/json": {"schema": HoldCreate.model_json_schema()}}},
}


def json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, headers=headers, media_type="application/json")


def _invalid(loc: list[str | int], msg: str) -> ApiError:
    """The same body the shared RequestValidationError handler writes."""
    return ApiError(422, "VALIDATION_ERROR", "request is not valid", problems=[{"loc": loc, "msg": msg}])


def showtime_id(request: Request) -> int:
    raw: str = request.path_params["showtime_id"]
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_SHOWTIME_ID:
        raise _invalid(["path", "showtime_id"], "Input should be a valid integer")
    return int(raw)


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= 200:
        raise _invalid(["header", "Idempotency-Key"], "String should have 1 to 200 characters")
    return key


async def seats(request: Request) -> tuple[list[str], dict[str, str], BestSeats | None]:
    """The `seats` of the JSON body, at most 64, and no other field: each a code (ADULT) or
    `{"code", "ticketType"}`. The codes and each code's ticket type (only those given). Or `best` alone (best
    available: [], {} and what it asks), read by HoldCreate's own part, BestRequest."""
    content_type = request.headers.get("content-type")
    if content_type is not None and "json" not in content_type.lower():
        raise _invalid(["body"], "Input should be a JSON object")  # as FastAPI: non-JSON bodies are not parsed
    try:
        data = orjson.loads(await request.body())
    except orjson.JSONDecodeError as exc:
        raise _invalid(["body"], "JSON decode error") from exc
    if not isinstance(data, dict):
        raise _invalid(["body"], "Input should be a valid dictionary or object")
    if extra := [k for k in data if k not in ("seats", "best")]:
        raise _invalid(["body", extra[0]], "Extra inputs are not permitted")
    if ("seats" in data) == ("best" in data):
        raise _invalid(["body"], "Value error, give either seats or best")
    if "best" in data:
        return [], {}, best(data["best"])
    codes, types = _listed(data["seats"])
    return codes, types, None


def best(asked: Any) -> BestSeats:
    """Best available's part of the body: not the hot path (one request takes what many clicks would), so the
    model reads it, with the same 422 body."""
    try:
        return BestRequest.model_validate(asked).command()
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise _invalid(["body", "best", *problem["loc"]], problem["msg"]) from exc


def _listed(listed: Any) -> tuple[list[str], dict[str, str]]:
    if not isinstance(listed, list):
        raise _invalid(["body", "seats"], "Input should be a valid list")
    if len(listed) > MAX_LISTED_SEATS:
        raise _invalid(["body", "seats"], f"List should have at most {MAX_LISTED_SEATS} items")
    codes, types = [], {}
    for i, seat in enumerate(listed):
        if isinstance(seat, dict):
            if set(seat) - {"code", "ticketType"} or not isinstance(seat.get("code"), str) \
                    or not isinstance(seat.get("ticketType", ""), str):
                raise _invalid(["body", "seats", i], "Input should be {\"code\": string, \"ticketType\": string}")
            seat, kind = seat["code"], seat.get("ticketType")
            if kind is not None:
                types[seat] = kind
        if not isinstance(seat, str):
            raise _invalid(["body", "seats", i], "Input should be a valid string")
        codes.append(seat)
    return codes, types
