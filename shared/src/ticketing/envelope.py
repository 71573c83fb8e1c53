"""The envelope every event travels in, defined once: the fields around an event's data, the Kafka headers
every message carries, and the headers that name its cause.

Two writers put events in an outbox: Python (ticketing.outbox, from the catalogue's models) and hold-service's
SQL, which builds its seat-map events where the seatMapVersion is known (its sql/schema.sql,
append_seat_map_events). Both take the envelope and the headers from here: the SQL writer gets `sql_form()`
with every statement that writes events, and the `caused_by()` of the request or event behind them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from ticketing import request_id, tracing


class Model(BaseModel):
    # Producers are strict (nothing outside the contract is sent); the published schemas (ticketing.contract)
    # mark defaulted fields required, since every message carries them.
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_serialization_defaults_required=True)


class Envelope(Model):
    """The fields of every booking-events message around its `data`: an event of a whole showtime
    (ShowtimeCancelled) has these and its showtimeId."""

    eventId: uuid.UUID = Field(description="Unique per event; a redelivered copy has the same id (de-duplicate "
                                           "on it: delivery is at least once).")
    type: str
    version: Literal[1] = 1
    occurredAt: datetime
    source: str = Field(description="The producing service.")


class BookingEnvelope(Envelope):
    """The envelope of an event about one booking."""

    bookingId: uuid.UUID = Field(description="Also the Kafka key: one booking's events are in order.")
    showtimeId: int
    customerId: int


TYPE_HEADER = "ce_type"  # the event's type, readable without decoding the value

# The headers of every message, in order: Debezium's `id`, then CloudEvents' binary mode. A value in braces
# is the envelope's field of that name (as in the JSON value), any other value is itself.
HEADERS: tuple[tuple[str, str], ...] = (
    ("id", "{eventId}"),
    ("ce_specversion", "1.0"),
    ("ce_id", "{eventId}"),
    (TYPE_HEADER, "{type}"),
    ("ce_source", "{source}"),
    ("ce_time", "{occurredAt}"),
    ("content-type", "application/json"),
)


def _field(value: str) -> str | None:
    return value[1:-1] if value.startswith("{") and value.endswith("}") else None


def headers_of(envelope: dict[str, Any]) -> list[tuple[str, bytes]]:
    """HEADERS filled from an event's JSON form (`source`: the producer's name if the event has none)."""
    return [(name, str(envelope[f] if (f := _field(value)) else value).encode()) for name, value in HEADERS]


def caused_by() -> list[tuple[str, str]]:
    """The headers naming what caused the events written now: the span's `traceparent` (tracing on), and the
    request id of the HTTP request or the event being handled."""
    headers = list(tracing.propagation_headers().items())
    if (rid := request_id.current()) is not None:
        headers.append((request_id.HEADER, rid))
    return headers


def sql_form(topic: str, source: str) -> str:
    """The envelope for an SQL writer, as JSON: the topic, the envelope's constant fields and HEADERS as
    [name, envelope field or null, constant or null]."""
    constant = {"version": Envelope.model_fields["version"].default, "source": source}
    headers = [[name, _field(value), None if _field(value) else value] for name, value in HEADERS]
    return orjson.dumps({"topic": topic, "envelope": constant, "headers": headers}).decode()


class Outgoing(Model):
    """One message as it goes to Kafka: topic, key, JSON value and headers."""

    topic: str
    key: str
    value: bytes
    headers: list[tuple[str, bytes]]


def message(topic: str, key: str, event: BaseModel, source: str) -> Outgoing:
    """`event` as the message its topic carries, under `key`; `source` names the producer when the event
    itself does not (VoucherReserved)."""
    body = event.model_dump(mode="json")
    return Outgoing(topic=topic, key=key, value=orjson.dumps(body), headers=headers_of({"source": source, **body}))
