"""Request field types shared by the services' API schemas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime


def _storable(value: str) -> str:
    # Postgres text cannot hold NUL, and UTF-8 cannot encode an unpaired surrogate: refused here with a
    # 422 rather than failing in the database with a 500.
    if any(ord(c) < 0x20 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError("control characters and unpaired surrogates are not allowed")
    return value


StorableText = Annotated[str, AfterValidator(_storable)]


def _in_utc(value: datetime) -> datetime:
    # An offset can carry a time past the ends of the calendar in UTC (0001-01-01T00:00+03:00 is in year 0):
    # refused here with a 422, not by an OverflowError in a comparison or in the database with a 500.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the time is outside the years 1-9999 in UTC") from None


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_in_utc)]  # an offset required, kept as UTC
UtcTimestamp = Annotated[datetime, AfterValidator(_in_utc)]  # without an offset: UTC, as Postgres would take it
