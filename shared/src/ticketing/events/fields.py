"""What the catalogue's payloads have in common: the clock of new events, the seat-map version's meaning, and
the form of a field added to a published payload."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import Field


def utcnow() -> datetime:
    return datetime.now(UTC)


SEAT_MAP_VERSION = ("The showtime's seat-map version after this change: +1 per change, no gap. Applying a "
                    "showtime's SeatsHeld, SeatsReleased, BookingConfirmed and BookingCancelled in this order "
                    "reproduces its seat map.")


CURRENCY = ("The currency of every amount in this event, ISO 4217 upper case (EUR, USD, GBP...). Optional: "
            "absent from older producers' messages; the amounts are then in the deployment's currency.")
ISO_4217 = r"^[A-Z]{3}$"


def optional(description: str) -> Any:
    """A field added to a version-1 payload after it was published: absent from the message when the producer
    does not know it (an older producer, or nothing to say), so the published schema does not require it and
    a consumer must do without it."""
    return Field(default=None, description=description, exclude_if=lambda value: value is None)


def currency() -> Any:
    """The optional `currency` of an event that carries money (added within version 1)."""
    return Field(default=None, description=CURRENCY, pattern=ISO_4217, exclude_if=lambda value: value is None)
