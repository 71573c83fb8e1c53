"""A seat's row is updated in place (HOT: heap-only, no index entry) by every hold, expiry and release of it,
so a seat looked up by its key finds one version, not every version not yet vacuumed (migration 0009)."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest
from hold_service.adapters.repository import FORM, Q

pytestmark = pytest.mark.integration


async def test_show_seat_is_indexed_only_by_what_no_change_of_a_seat_touches(db: asyncpg.Connection) -> None:
    """An index on a column a hold writes (hold_id had one) makes every update of the row a non-HOT one."""
    indexes = await db.fetch(
        "SELECT indexrelid::regclass::text AS name, indexprs IS NULL AND indpred IS NULL AS plain, "
        "ARRAY(SELECT attname FROM pg_attribute WHERE attrelid = indrelid AND attnum = ANY(indkey)) AS columns "
        "FROM pg_index WHERE indrelid = 'show_seat'::regclass")
    # show_seat_place (best available's neighbours) is on the seat's place, which no hold changes.
    assert sorted((r["name"], r["plain"], sorted(r["columns"])) for r in indexes) == [
        ("show_seat_pkey", True, ["seat_code", "showtime_id"]),
        ("show_seat_place", True, ["row_name", "showtime_id", "x"])]
    assert "fillfactor=50" in (await db.fetchval("SELECT reloptions FROM pg_class WHERE oid = 'show_seat'::regclass"))


COUNTERS = ("SELECT pg_stat_get_xact_tuples_updated('show_seat'::regclass) AS updated, "
            "pg_stat_get_xact_tuples_hot_updated('show_seat'::regclass) AS hot")


async def test_a_hold_its_expiry_the_next_hold_and_a_release_update_the_seats_in_place(db: asyncpg.Connection) -> None:
    sid, seats = random.randint(10**12, 2**52), ["A1", "A2"]
    transaction = db.transaction()  # rolled back; the backend's counters are read before and after, in it
    await transaction.start()
    try:
        assert await db.fetchval(Q.insert_showtime, sid, "HOT", datetime(2031, 1, 1, tzinfo=UTC), 1000,
                                 '{"STANDARD": {"ADULT": 1000}}', None, None, None, "UTC", False, "EUR") == sid
        await db.execute(Q.insert_seats, sid, seats, ["STANDARD"] * 2, ["A"] * 2, [1, 2], [1, 2])
        before = await db.fetchrow(COUNTERS)
        live = uuid.uuid4()
        for hold, ttl in ((uuid.uuid4(), -1.0), (live, 60.0)):  # the second takes the seats of the first, expired
            row = await db.fetchrow(Q.take_seats, sid, ttl, 8, [hold], [7], [uuid.uuid4()], [1, 1], seats, ["[]"],
                                    FORM, ["ADULT"] * 2, 0, False)
            assert row["last_version"] is not None, dict(row)
        assert (await db.fetchrow(Q.release_hold, live, "CANCELLED", FORM, "[]"))["freed"] == seats
        after = await db.fetchrow(COUNTERS)
    finally:
        await transaction.rollback()
    # 2 seats x (held, taken from the expired hold, released), every new version on its row's page
    assert {k: after[k] - before[k] for k in ("updated", "hot")} == {"updated": 6, "hot": 6}
