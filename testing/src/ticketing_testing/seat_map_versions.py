"""hold-service gives a seat-map change its version a moment after the change's COMMIT (its processes' numberers:
services/hold-service adapters/seat_map_versions.py). A test that reads hold-service's outbox or its showtimes'
versions straight from Postgres first has every change committed so far numbered, as a numberer would."""

from __future__ import annotations

import asyncpg


async def numbered(conn: asyncpg.Connection) -> None:
    """Every seat-map change committed so far has its version; waits for a numbering under way. `conn` is on
    hold-service's schema."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(seat_map_numbering_key())")
        await conn.execute("SELECT stamp_seat_map_versions(NULL)")
