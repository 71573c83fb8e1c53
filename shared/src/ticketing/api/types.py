"""Request field types shared by the services' API schemas."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _storable(value: str) -> str:
    # Postgres text cannot hold NUL, and UTF-8 cannot encode an unpaired surrogate: refused here with a
    # 422 rather than failing in the database with a 500.
    if any(ord(c) < 0x20 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError("control characters and unpaired surrogates are not allowed")
    return value


StorableText = Annotated[str, AfterValidator(_storable)]
