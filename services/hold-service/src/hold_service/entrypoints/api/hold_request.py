"""POST /showtimes/{id}/holds without per-request pydantic models or FastAPI dependency resolution.

Most requests under load are answered 409 by the Redis gate in well under a millisecond of I/O, so
framework work dominates their cost: FastAPI's body model, dependency solving and response class
(docs/benchmarks.md has the figures). This module reads the raw body with orjson and checks its shape by
hand, but not by rules of its own: the fields, the most seats a request lists, a seat's fields and the ticket
types come from the JSON schema of HoldCreate (schemas.py), the one description of the body, which is also
what `HOLD_OPENAPI` shows in /docs; the path's and header's limits come from schemas.py's types in the same
way. Read once, at import: a request pays for set lookups only. The seat rules themselves stay in the domain
(`requested_seats`), and the 422 body is the contract's (`VALIDATION_ERROR` + `problems`).
tests/unit/test_hold_request_description.py checks that this reader, the model and the OpenAPI agree.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError
from ticketing.api.errors import ApiError

from hold_service.domain.model import BestSeats
from hold_service.entrypoints.api.schemas import BestRequest, HoldCreate, IdempotencyKeyHeader, ShowtimeIdPath

BODY: dict[str, Any] = HoldCreate.model_json_schema()
SHOWTIME_ID: dict[str, Any] = TypeAdapter(ShowtimeIdPath).json_schema()
IDEMPOTENCY_KEY: dict[str, Any] = TypeAdapter(IdempotencyKeyHeader).json_schema()


def _alternative(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The alternative of `schema` (an anyOf, or itself) of JSON type `kind`, a $ref into BODY followed."""
    for option in schema.get("anyOf", [schema]):
        found: dict[str, Any] = BODY["$defs"][option["$ref"].rsplit("/", 1)[1]] if "$ref" in option else option
        if found.get("type") == kind:
            return found
    raise LookupError(f"no {kind} in {schema}")


FIELDS = frozenset(BODY["properties"])
NULLABLE = frozenset(k for k, s in BODY["properties"].items() if {"type": "null"} in s.get("anyOf", ()))  # null: absent
MAX_LISTED_SEATS: int = _alternative(BODY["properties"]["seats"], "array")["maxItems"]
SEAT = _alternative(_alternative(BODY["properties"]["seats"], "array")["items"], "object")
SEAT_FIELDS = frozenset(SEAT["properties"])
_TYPES: list[str] = SEAT["properties"]["ticketType"]["enum"]
TICKET_TYPES = frozenset(_TYPES)
TICKET_TYPE_ERROR = f"Input should be {', '.join(map(repr, _TYPES[:-1]))} or {_TYPES[-1]!r}"  # pydantic's words
SHOWTIME_IDS = range(SHOWTIME_ID["minimum"], SHOWTIME_ID["maximum"] + 1)
KEY_LENGTHS = range(IDEMPOTENCY_KEY["minLength"], IDEMPOTENCY_KEY["maxLength"] + 1)

HOLD_OPENAPI: dict[str, Any] = {
    "security": [{"bearer": []}],  # a customer's token (checked in the route, no FastAPI dependency)
    "parameters": [
        {"name": "showtime_id", "in": "path", "required": True, "schema": SHOWTIME_ID},
        {"name": "Idempotency-Key", "in": "header", "required": False, "schema": IDEMPOTENCY_KEY},
        # Required while the showtime's waiting room is on (else 403 ADMISSION_REQUIRED): GET /queue/{ticket}.
        {"name": "X-Admission-Token", "in": "header", "required": False, "schema": {"type": "string"}},
    ],
    "requestBody": {"required": True, "content": {"application/json": {"schema": BODY}}},
}


def json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(payload), status_code=status, headers=headers, media_type="application/json")


def _invalid(loc: list[str | int], msg: str) -> ApiError:
    """The same body the shared RequestValidationError handler writes."""
    return ApiError(422, "VALIDATION_ERROR", "request is not valid", problems=[{"loc": loc, "msg": msg}])


def showtime_id(request: Request) -> int:
    raw: str = request.path_params["showtime_id"]
    if not (raw.isascii() and raw.isdigit()) or int(raw) not in SHOWTIME_IDS:
        raise _invalid(["path", "showtime_id"], "Input should be a valid integer")
    return int(raw)


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is not None and len(key) not in KEY_LENGTHS:
        raise _invalid(["header", "Idempotency-Key"],
                       f"String should have {KEY_LENGTHS.start} to {KEY_LENGTHS.stop - 1} characters")
    return key


async def seats(request: Request) -> tuple[list[str], dict[str, str], BestSeats | None]:
    return body(request.headers.get("content-type"), await request.body())


def body(content_type: str | None, raw: bytes) -> tuple[list[str], dict[str, str], BestSeats | None]:
    """The `seats` of the JSON body, at most MAX_LISTED_SEATS, and no field HoldCreate does not have: each a code
    (ADULT) or `{"code", "ticketType"}`. The codes and each code's ticket type (only those given). Or `best`
    alone (best available: [], {} and what it asks), read by HoldCreate's own part, BestRequest."""
    if content_type is not None and "json" not in content_type.lower():
        raise _invalid(["body"], "Input should be a JSON object")  # as FastAPI: non-JSON bodies are not parsed
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(["body"], "JSON decode error") from exc
    if not isinstance(data, dict):
        raise _invalid(["body"], "Input should be a valid dictionary or object")
    if extra := [k for k in data if k not in FIELDS]:
        raise _invalid(["body", extra[0]], "Extra inputs are not permitted")
    given = {k: v for k, v in data.items() if v is not None or k not in NULLABLE}
    if ("seats" in given) == ("best" in given):
        raise _invalid(["body"], "Value error, give either seats or best")
    if "best" in given:
        return [], {}, best(given["best"])
    codes, types = _listed(given["seats"])
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
            if not seat.keys() <= SEAT_FIELDS or not isinstance(seat.get("code"), str) \
                    or not isinstance(seat.get("ticketType", ""), str):
                raise _invalid(["body", "seats", i], "Input should be {\"code\": string, \"ticketType\": string}")
            seat, kind = seat["code"], seat.get("ticketType")
            if kind is not None:
                if kind not in TICKET_TYPES:
                    raise _invalid(["body", "seats", i, "ticketType"], TICKET_TYPE_ERROR)
                types[seat] = kind
        if not isinstance(seat, str):
            raise _invalid(["body", "seats", i], "Input should be a valid string")
        codes.append(seat)
    return codes, types
