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
    for event in (booked, held, held, released):  # 3 before 2, and a duplicate
        maps.handle(event)
    assert (maps.maps[1].version, maps.maps[1].seats) == (3, {"A1": "BOOKED", "A2": "BOOKED"})
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
