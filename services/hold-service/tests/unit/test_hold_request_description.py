"""The hold request is described once, by HoldCreate: the route's fast reader (hold_request.py), the model and the
OpenAPI of POST /showtimes/{id}/holds agree. The reader accepts exactly the bodies the model accepts, reads the
same seats, ticket types and best-available request from them, and answers the others with the contract's 422
body; /docs shows the model's own JSON schema."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fastapi.encoders import jsonable_encoder
from hold_service.domain.model import TICKET_TYPES, BestSeats
from hold_service.entrypoints.api import hold_request
from hold_service.entrypoints.api.app import get_application
from hold_service.entrypoints.api.routes.holds import CREATE_HOLD_PATH
from hold_service.entrypoints.api.schemas import HoldCreate, IdempotencyKeyHeader, SeatRequest, ShowtimeIdPath
from pydantic import TypeAdapter, ValidationError
from ticketing.api.errors import ApiError

MAX = hold_request.MAX_LISTED_SEATS
BODIES: list[Any] = [
    {"seats": ["A1"]}, {"seats": ["A1", "A2"]}, {"seats": []}, {"seats": [f"A{n}" for n in range(1, MAX + 1)]},
    {"seats": [f"A{n}" for n in range(1, MAX + 2)]}, {"seats": [{"code": "A1"}]},
    {"seats": [{"code": "A1", "ticketType": "CHILD"}, "A2"]}, {"seats": [{"code": "A1", "ticketType": "BABY"}]},
    {"seats": [{"code": "A1", "ticketType": None}]}, {"seats": [{"code": "A1", "ticketType": 3}]},
    {"seats": [{"ticketType": "CHILD"}]}, {"seats": [{"code": 1}]}, {"seats": [{"code": "A1", "row": "A"}]},
    {"seats": [1]}, {"seats": [None]}, {"seats": [["A1"]]}, {"seats": "A1"}, {"seats": {"A1": 1}}, {"seats": None},
    {"seats": ["A1"], "best": None}, {"seats": None, "best": {"count": 2}}, {"seats": ["A1"], "best": {"count": 2}},
    {"seats": ["A1"], "extra": 1}, {}, {"best": {"count": 2}}, {"best": {"count": 0}},
    {"best": {"count": 2, "category": "VIP", "ticketTypes": ["CHILD", "ADULT"], "together": False}},
    {"best": {"count": 2, "category": "GOLD"}}, {"best": {"count": 2, "extra": 1}}, {"best": "two"},
    {"best": None}, [], "seats", None, 3,
    *({"seats": [{"code": "A1", "ticketType": kind}]} for kind in TICKET_TYPES),
]


def by_reader(raw: bytes) -> tuple[list[str], dict[str, str], BestSeats | None] | None:
    try:
        return hold_request.body("application/json", raw)
    except ApiError as exc:
        assert (exc.status, exc.code) == (422, "VALIDATION_ERROR")  # the contract's body
        [problem] = exc.details["problems"]
        assert problem["loc"][0] == "body" and problem["msg"]
        return None


def by_model(raw: bytes) -> tuple[list[str], dict[str, str], BestSeats | None] | None:
    try:
        body = HoldCreate.model_validate_json(raw)
    except ValidationError:
        return None
    if body.best is not None:
        return [], {}, body.best.command()
    seats = body.seats or []
    return ([s if isinstance(s, str) else s.code for s in seats],
            {s.code: s.ticketType for s in seats if isinstance(s, SeatRequest) and "ticketType" in s.model_fields_set},
            None)


@pytest.mark.parametrize("body", BODIES, ids=lambda b: orjson.dumps(b).decode()[:60])
def test_the_reader_and_the_model_accept_the_same_bodies_and_read_the_same_request(body: Any) -> None:
    raw = orjson.dumps(body)
    assert by_reader(raw) == by_model(raw)


def test_a_body_that_is_not_json_is_refused_as_the_model_refuses_it() -> None:
    assert by_reader(b"{") is None and by_model(b"{") is None


def test_the_reader_s_rules_are_the_model_s() -> None:
    schema = HoldCreate.model_json_schema()
    assert hold_request.FIELDS == set(HoldCreate.model_fields) == set(schema["properties"])
    assert hold_request.SEAT_FIELDS == set(SeatRequest.model_fields)
    assert hold_request.TICKET_TYPES == set(TICKET_TYPES)  # the domain's ticket types are the body's
    assert MAX == max(m.max_length for m in HoldCreate.model_fields["seats"].metadata)


def test_the_openapi_of_a_hold_request_is_the_model_s_schema() -> None:
    """As the OpenAPI document writes it: FastAPI leaves out what is null (a `"default": null`)."""
    operation = get_application().openapi()["paths"][CREATE_HOLD_PATH]["post"]
    schema = jsonable_encoder(HoldCreate.model_json_schema(), exclude_none=True)
    assert operation["requestBody"]["content"]["application/json"]["schema"] == schema
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["showtime_id"] == TypeAdapter(ShowtimeIdPath).json_schema()
    assert parameters["Idempotency-Key"] == TypeAdapter(IdempotencyKeyHeader).json_schema()
