"""The published event contract (docs/events) is what the catalogue says, and a valid AsyncAPI 3.0 document."""

import json

import jsonschema
import yaml
from ticketing import contract
from ticketing.events import BOOKING_EVENT_TYPES
from ticketing_testing import REPO_ROOT, require

EVENTS = REPO_ROOT / "docs" / "events"
ASYNCAPI_SCHEMA = REPO_ROOT / "var" / "contract" / "asyncapi-3.0.0.json"  # make contract-tools


def asyncapi() -> dict:
    return yaml.safe_load((EVENTS / "asyncapi.yaml").read_text())


def test_the_schema_files_are_generated_from_the_catalogue() -> None:
    assert contract.differences(EVENTS / "schemas") == [], "run: ticketing contract write docs/events/schemas"


def test_every_schema_is_a_valid_json_schema() -> None:
    for path in (EVENTS / "schemas").glob("*.schema.json"):
        jsonschema.Draft7Validator.check_schema(json.loads(path.read_text()))


def test_the_asyncapi_document_is_valid_asyncapi_3() -> None:
    require("the AsyncAPI 3.0 JSON Schema", ASYNCAPI_SCHEMA.exists(), "run `make contract-tools`")
    official = json.loads(ASYNCAPI_SCHEMA.read_text())
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}"
              for e in jsonschema.Draft7Validator(official).iter_errors(asyncapi())]
    assert errors == []


def test_the_asyncapi_document_covers_the_catalogue() -> None:
    doc = asyncapi()
    messages = doc["components"]["messages"]
    assert set(BOOKING_EVENT_TYPES) <= set(doc["channels"]["bookingEvents"]["messages"])
    for name in [*BOOKING_EVENT_TYPES, "VoucherReserved"]:
        assert (EVENTS / messages[name]["payload"]["$ref"]).exists(), name
    assert set(doc["components"]["schemas"]["EventHeaders"]["required"]) == {
        "id", "ce_specversion", "ce_id", "ce_type", "ce_source", "ce_time", "content-type"}


def test_the_example_consumer_applies_seat_events_in_version_order() -> None:
    example = _example()
    maps = example.SeatMaps()
    held = {"eventId": "a", "type": "SeatsHeld", "showtimeId": 1, "data": {"seats": ["A1", "A2"], "seatMapVersion": 1}}
    booked = {"eventId": "b", "type": "BookingConfirmed", "showtimeId": 1,
              "data": {"seats": ["A1", "A2"], "seatMapVersion": 3}}
    released = {"eventId": "c", "type": "SeatsReleased", "showtimeId": 1,
                "data": {"seats": ["A2"], "seatMapVersion": 2}}
    cancelled = {"eventId": "d", "type": "BookingCancelled", "showtimeId": 1,
                 "data": {"seats": ["A1", "A2"], "seatMapVersion": 4}}
    closed = {"eventId": "e", "type": "ShowtimeCancelled", "showtimeId": 1, "data": {"reason": "projector"}}
    for event in (booked, held, held, released):  # 3 before 2, and a duplicate
        maps.handle(event)
    assert (maps.maps[1].version, maps.maps[1].seats) == (3, {"A1": "BOOKED", "A2": "BOOKED"})
    for event in (closed, cancelled, cancelled):  # a type without seats, then a cancellation twice
        maps.handle(event)
    assert (maps.maps[1].version, maps.maps[1].seats) == (4, {"A1": "AVAILABLE", "A2": "AVAILABLE"})
    late = example.SeatMap()
    late.offer({"type": "SeatsHeld", "data": {"seats": ["B1"], "seatMapVersion": 8}})
    assert late.version == 0 and late.waiting  # started mid-stream: waits for a snapshot
    late.load({"version": 7, "seats": [{"code": "B1", "status": "AVAILABLE"}]})
    assert (late.version, late.seats) == (8, {"B1": "HELD"})


def _example():  # type: ignore[no-untyped-def]
    """docs/events/examples/seat_map_consumer.py, the file another team would copy."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("seat_map_consumer", EVENTS / "examples" / "seat_map_consumer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# What each version-1 payload required when it was first published. Within a version a schema only gains
# optional fields: a field added as required would refuse the messages of every producer not yet upgraded.
VERSION_1_REQUIRED = {
    "BookingCancelled": {"holdId", "paymentId", "reason", "seatMapVersion", "seats"},
    "BookingConfirmed": {"amountCents", "discountCents", "holdId", "paymentId", "seatMapVersion", "seats"},
    "BookingFailed": {"paymentId", "reason"},
    "CheckoutStarted": {"amountCents", "discountCents", "expiresAt", "paymentId", "voucherCode"},
    "HoldExtended": {"expiresAt", "holdId"},
    "PaymentFailed": {"paymentId", "reason"},
    "PaymentSucceeded": {"amountCents", "paymentId"},
    "RefundIssued": {"amountCents", "paymentId", "refundId"},
    "SeatsHeld": {"amountCents", "expiresAt", "holdId", "seatMapVersion", "seats"},
    "SeatsReleased": {"holdId", "reason", "seatMapVersion", "seats"},
    "ShowtimeCancelled": {"reason"},
    "TicketCheckedIn": {"at", "door"},
    "WaitingRoomClosed": {"activeLimit", "reason"},
    "WaitingRoomOpened": {"activeLimit", "reason"},
}


def test_version_1_payloads_only_ever_gain_optional_fields() -> None:
    for name in BOOKING_EVENT_TYPES:
        schema = json.loads((EVENTS / "schemas" / f"{name}.schema.json").read_text())
        required = set(schema["$defs"][f"{name}Data"]["required"])
        assert required == VERSION_1_REQUIRED[name], (name, required ^ VERSION_1_REQUIRED[name])


def test_an_older_producer_s_booking_confirmed_still_validates() -> None:
    """A BookingConfirmed without the ticket details (as producers sent it before they existed) is valid."""
    schema = json.loads((EVENTS / "schemas" / "BookingConfirmed.schema.json").read_text())
    old = {"eventId": "6f1c2d3e-0000-4000-8000-000000000001", "type": "BookingConfirmed", "version": 1,
           "occurredAt": "2026-01-01T00:00:00Z", "source": "hold-service",
           "bookingId": "6f1c2d3e-0000-4000-8000-000000000002", "showtimeId": 1, "customerId": 7,
           "data": {"holdId": "6f1c2d3e-0000-4000-8000-000000000003", "seats": ["A1"], "amountCents": 1200,
                    "discountCents": 0, "paymentId": "6f1c2d3e-0000-4000-8000-000000000004", "seatMapVersion": 2}}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(old)) == []
