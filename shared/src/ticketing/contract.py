"""The event contract as files other teams code against: one JSON Schema per message type, generated from
the event catalogue (ticketing.events), so the published files cannot drift from what the services send
(tests/contract checks the committed files against this and every produced message against the files).

    ticketing contract write docs/events/schemas      (re)write the schema files
    ticketing contract check docs/events/schemas      exit 1 if they differ from the catalogue

Published schemas are tolerant where the producers are strict: a consumer should accept fields added later
within the same `version` (the catalogue itself forbids unknown fields, so nothing outside the contract is
ever sent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ticketing.events import BOOKING_EVENT_TYPES, VoucherReserved

SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"  # the dialect AsyncAPI 3.0 payloads use
ID_BASE = "https://ticketing.example/events/schemas/"


def _tolerant(node: Any) -> Any:
    """Drop `additionalProperties: false` and pydantic's generated titles, recursively."""
    if isinstance(node, dict):
        return {k: _tolerant(v) for k, v in node.items()
                if not (k == "additionalProperties" and v is False) and not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_tolerant(v) for v in node]
    return node


def _schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    body = _tolerant(model.model_json_schema(mode="serialization"))
    return {"$schema": SCHEMA_DIALECT, "$id": f"{ID_BASE}{name}.schema.json", "title": name, **body}


def schemas() -> dict[str, dict[str, Any]]:
    """file name -> schema, for every message type of booking-events and voucher-reserved."""
    models: dict[str, type[BaseModel]] = {**BOOKING_EVENT_TYPES, "VoucherReserved": VoucherReserved}
    return {f"{name}.schema.json": _schema(model, name) for name, model in sorted(models.items())}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=False) + "\n"


def write(folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (folder / name).write_text(render(schema))
    return sorted(schemas())


def differences(folder: Path) -> list[str]:
    """Files missing, stale or extra in `folder`."""
    wanted = {name: render(schema) for name, schema in schemas().items()}
    found = {p.name: p.read_text() for p in folder.glob("*.schema.json")}
    return sorted({n for n in wanted if found.get(n) != wanted[n]} | (found.keys() - wanted.keys()))
