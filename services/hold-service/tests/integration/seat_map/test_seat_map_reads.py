"""GET /showtimes/{id}/seats: public, ETag = version, 304; kept in each process' memory from the changes
Postgres notifies (several processes, changes made by any of them or by the worker); lazy expiry shows once
recorded; a lost feed connection is taken up again and the maps reloaded."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hold_service.adapters.repository import PgHoldsUnitOfWork, Q
from hold_service.adapters.seat_map_source import PgSeatMapSource
from hold_service.config import HoldSettings
from hold_service.domain.commands import ConfirmBooking
from hold_service.domain.seat_map import SeatMap
from hold_service.service_layer.lifecycle import confirm_booking, sweep_expired
from pydantic import ValidationError
from ticketing_testing import eventually
from ticketing_testing.cutting_proxy import CuttingProxy
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


class CountingSource(PgSeatMapSource):
    """The real source, counting how often a map is read from Postgres."""

    loads = 0

    async def load(self, showtime_id: int) -> SeatMap | None:
        self.loads += 1
        return await super().load(showtime_id)


def statuses(body: dict) -> dict[str, str]:
    return {s["code"]: s["status"] for s in body["seats"]}


async def fresh(db, sid: int) -> tuple[int, dict[str, str]]:  # type: ignore[no-untyped-def]
    """The seat map as Postgres has it now, every change committed so far numbered."""
    await numbered(db)
    row = await db.fetchrow(Q.seat_map, sid)
    return row["version"], {s[0]: s[1] for s in row["seats"]}


async def test_public_with_etag_and_304(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 3})
        url = f"/showtimes/{sid}/seats"
        first = await svc.client.get(url)  # no token: public
        assert first.status_code == 200 and first.headers["etag"] == '"0"', first.text
        assert first.json() == {"showtimeId": sid, "title": "Test", "startsAt": "2030-01-01T20:00:00Z", "version": 0,
                                "durationMinutes": None, "cinema": None, "hall": None, "timeZone": "UTC",
                                "prices": {"STANDARD": {"ADULT": 1200}}, "currency": "EUR",
                                "seats": [{"code": f"F{n}", "status": "AVAILABLE", "category": "STANDARD",
                                           "row": "F", "x": n} for n in (1, 2, 3)]}
        for tag in ('"0"', 'W/"0"', '"7", "0"', "*"):
            same = await svc.client.get(url, headers={"If-None-Match": tag})
            assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == '"0"', tag
        assert (await svc.hold(sid, ["F2"])).status_code == 201

        async def moved() -> bool:
            r = await svc.client.get(url, headers={"If-None-Match": '"0"'})
            return r.status_code == 200 and r.headers["etag"] == '"1"' and statuses(r.json())["F2"] == "HELD"
        assert await eventually(moved, timeout=5, interval=0.02)
        missing = await svc.client.get(f"/showtimes/{h.new_id()}/seats")
        assert missing.status_code == 404 and missing.json()["error"] == "NOT_FOUND"
        bad = await svc.client.get("/showtimes/0/seats")
        assert bad.status_code == 422 and bad.json()["error"] == "VALIDATION_ERROR"


async def test_a_proxy_may_keep_the_map_for_seat_map_cache_seconds(start) -> None:
    async with start() as default, start(seat_map_cache_seconds=2) as cached:
        sid = await default.showtime({"F": 2})
        url = f"/showtimes/{sid}/seats"
        assert (await default.client.get(url)).headers["cache-control"] == "no-cache"
        first = await cached.client.get(url)
        assert first.status_code == 200 and first.headers["cache-control"] == "public, max-age=2", first.headers
        again = await cached.client.get(url, headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304 and again.headers["cache-control"] == "public, max-age=2"
        assert again.headers["etag"] == first.headers["etag"]


def test_seat_map_cache_seconds_stays_within_the_maps_staleness() -> None:
    assert HoldSettings(seat_map_cache_seconds=2).seat_map_cache_seconds == 2
    with pytest.raises(ValidationError, match="seat_map_cache_seconds"):
        HoldSettings(seat_map_cache_seconds=3)


async def test_every_process_follows_changes_made_anywhere_without_reading_postgres(start, db, h) -> None:
    async with start() as a, start() as b:
        counting = CountingSource(b.service.pool)
        b.service.seat_maps.source = counting
        sid = await a.showtime({"F": 6})
        assert (await b.client.get(f"/showtimes/{sid}/seats")).json()["version"] == 0
        owner = h.new_id()
        held = (await a.hold(sid, ["F1", "F2"], owner)).json()  # through process A
        assert (await b.hold(sid, ["F3"])).status_code == 201  # through B itself
        assert (await a.client.delete(f"/holds/{held['holdId']}", headers=h.auth(owner))).status_code == 204
        again = (await a.hold(sid, ["F5", "F6"])).json()
        async with a.service.pool.acquire() as conn, conn.transaction():  # the worker's PaymentSucceeded
            outcome = await confirm_booking(ConfirmBooking(uuid.UUID(again["bookingId"]), uuid.uuid4(), 2400),
                                            PgHoldsUnitOfWork(conn=conn))
        assert outcome == "confirmed"
        version, expected = await fresh(db, sid)

        async def caught_up(svc) -> bool:  # type: ignore[no-untyped-def]
            body = (await svc.client.get(f"/showtimes/{sid}/seats")).json()
            return body["version"] == version and statuses(body) == expected
        assert await eventually(lambda: caught_up(a), timeout=5, interval=0.02)
        assert await eventually(lambda: caught_up(b), timeout=5, interval=0.02)
        assert expected["F5"] == "BOOKED" and expected["F3"] == "HELD"
        for _ in range(50):
            await b.client.get(f"/showtimes/{sid}/seats")
        assert counting.loads == 1  # read from Postgres once, then moved only by the changes


async def test_an_expired_hold_shows_until_its_release_is_recorded(start, db, h) -> None:
    async with start(hold_ttl_seconds=1, sweep_batch_size=100_000) as svc:
        sid = await svc.showtime({"F": 2})
        hold = (await svc.hold(sid, ["F1"])).json()
        url = f"/showtimes/{sid}/seats"
        await eventually(lambda: _version_is(svc, url, 1), timeout=5, interval=0.02)

        async def expired() -> bool:
            r = await svc.client.get(f"/holds/{hold['holdId']}", headers=h.auth(0, "service"))
            return bool(r.json()["status"] == "EXPIRED")
        assert await eventually(expired, timeout=10)
        body = (await svc.client.get(url)).json()
        assert body["version"] == 1 and statuses(body)["F1"] == "HELD"  # the map at version 1, as recorded
        assert await fresh(db, sid) == (1, {"F1": "HELD", "F2": "AVAILABLE"})

        async def swept() -> bool:
            await sweep_expired(svc.deps)
            return await _version_is(svc, url, 2)
        assert await eventually(swept, timeout=10)
        assert statuses((await svc.client.get(url)).json())["F1"] == "AVAILABLE"


async def test_a_lost_feed_connection_is_taken_up_again_and_maps_reloaded(start, db) -> None:
    async with start() as a, start() as b:
        sid = await a.showtime({"F": 4})
        url = f"/showtimes/{sid}/seats"
        assert (await b.client.get(url)).json()["version"] == 0
        feed = b.service.seat_map_feed
        pid = feed.backend_pid
        await db.execute("SELECT pg_terminate_backend($1)", pid)
        assert (await a.hold(sid, ["F4"])).status_code == 201  # while B may not be listening
        assert await eventually(lambda: _listening_again(feed, pid), timeout=10, interval=0.02)
        assert await eventually(lambda: _version_is(b, url, 1), timeout=5, interval=0.02)
        assert statuses((await b.client.get(url)).json())["F4"] == "HELD"


async def test_the_feed_goes_to_the_session_url_and_follows_a_failovers_cut(start, hold_dsn, db) -> None:
    # DATABASE_SESSION_URL (here a balancer that cuts every connection at once, as cluster mode's HAProxy does to a
    # primary that is no longer one): the feed's LISTEN goes there, not to the pool's database URL.
    async with CuttingProxy(hold_dsn) as proxy, start() as a, start(database_session_url=proxy.dsn) as b:
        sid = await a.showtime({"F": 4})
        url = f"/showtimes/{sid}/seats"
        assert (await b.client.get(url)).json()["version"] == 0
        feed = b.service.seat_map_feed
        pid = feed.backend_pid
        assert feed.dsn == proxy.dsn and proxy.links
        proxy.cut()
        assert (await a.hold(sid, ["F2"])).status_code == 201  # committed while B's feed was cut off
        assert await eventually(lambda: _listening_again(feed, pid), timeout=10, interval=0.02)
        assert await eventually(lambda: _version_is(b, url, 1), timeout=5, interval=0.02)
        assert statuses((await b.client.get(url)).json())["F2"] == "HELD"


async def _version_is(svc, url: str, version: int) -> bool:  # type: ignore[no-untyped-def]
    return bool((await svc.client.get(url)).json()["version"] == version)


async def _listening_again(feed, old_pid: int) -> bool:  # type: ignore[no-untyped-def]
    await asyncio.sleep(0)
    return feed.listening.is_set() and feed.backend_pid not in (None, old_pid)
