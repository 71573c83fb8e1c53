"""The rules of a showtime's sale that HoldRepository and HoldWriter answer from SQL (on_sale, seat_is_free,
hold_expired, extend_hold, gate_seats, cancel_booking, the catalogue's status), run against the fakes
(tests/fakes/) and the real adapters on Postgres: a rule changed in the SQL and not in the fakes fails here."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import orjson
import pytest
from hold_service.domain.catalogue import CatalogueQuery, parse_cursor

pytestmark = pytest.mark.integration
SOON = timedelta(hours=2)  # a showtime two hours from now: on sale unless it closes more than 120 min before


async def in_uow(ports, act):  # type: ignore[no-untyped-def]
    """`act(uow)`'s answer, committed."""
    async with ports.uow() as uow:
        answer = await act(uow)
        await uow.commit()
    return answer


async def test_a_hold_is_refused_once_sales_close_or_the_showtime_is_cancelled(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    _, closed = await ports.take(sid, ["A1"], close_minutes=150)
    assert (closed.closed, closed.expires_at) == (True, None)
    _, open_ = await ports.take(sid, ["A1"], close_minutes=90)
    assert (open_.closed, open_.expires_at is not None) == (False, True)
    assert await in_uow(ports, lambda uow: uow.holds.cancel_showtime(sid, "OPERATOR")) is True
    _, cancelled = await ports.take(sid, ["A2"])
    assert (cancelled.closed, cancelled.expires_at) == (True, None)


async def test_the_catalogue_counts_free_seats_with_lazy_expiry_and_names_each_status(ports) -> None:
    cinema = f"contract-{uuid.uuid4().hex[:8]}"
    sids = [await ports.showtime(seats=3, starts_in=SOON + timedelta(minutes=n), cinema=cinema) for n in range(3)]
    closing = await ports.showtime(seats=3, starts_in=timedelta(minutes=30), cinema=cinema)
    await ports.take(sids[0], ["A1"], ttl=0.3)
    await ports.take(sids[0], ["A2"])
    await ports.take(sids[1], ["A1", "A2", "A3"])
    await in_uow(ports, lambda uow: uow.holds.cancel_showtime(sids[2], "OPERATOR"))
    await ports.elapse(0.6)
    now = ports.now()
    async with ports.uow() as uow:
        body = orjson.loads(await uow.holds.catalogue(CatalogueQuery(now, now + timedelta(days=1), cinema), 60, 10,
                                                      "?after="))
    listed = [(s["showtimeId"], s["status"], s["seatsAvailable"]) for s in body["showtimes"]]
    assert listed == [(closing, "CLOSED", 3), (sids[0], "ON_SALE", 2), (sids[1], "SOLD_OUT", 0),
                      (sids[2], "CANCELLED", 3)]
    pages, query = [], CatalogueQuery(now, now + timedelta(days=1), cinema)
    while query:  # a page of one at a time, each naming the next by the last one listed
        async with ports.uow() as uow:
            pages.append(orjson.loads(await uow.holds.catalogue(query, 60, 1, "?after=")))
        after = pages[-1]["next"] and parse_cursor(pages[-1]["next"].removeprefix("?after="))
        query = after and replace(query, after=after)
    assert [[s["showtimeId"] for s in page["showtimes"]] for page in pages] == [[closing], *([sid] for sid in sids)]
    assert parse_cursor(pages[0]["next"].removeprefix("?after="))[1] == closing
    assert pages[-1]["next"] is None and body["next"] is None


async def test_a_customer_s_bookings_are_newest_first_with_lazy_expiry(ports, h) -> None:
    sid, customer = await ports.showtime(), h.new_id()
    older, _ = await ports.take(sid, ["A1"], customer=customer, ttl=0.3)
    await ports.elapse(0.6)
    newer, _ = await ports.take(sid, ["A2"], customer=customer)
    async with ports.uow() as uow:
        views = await uow.holds.bookings_of(customer, 10)
        assert [v.hold.hold_id for v in await uow.holds.bookings_of(customer, 1)] == [newer.hold_id]
    assert [(v.hold.hold_id, v.hold.status, v.title) for v in views] == [
        (newer.hold_id, "HELD", "Contract"), (older.hold_id, "EXPIRED", "Contract")]


async def test_an_extension_moves_a_live_hold_to_the_later_time_within_its_cap(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    request, verdict = await ports.take(sid, ["A1", "A2"], ttl=60)
    created = (await ports.get(request.hold_id)).created_at
    earlier = await in_uow(ports, lambda uow: uow.holds.extend(request.hold_id, verdict.expires_at
                                                               - timedelta(seconds=30), 600))
    assert (earlier.expires_at, earlier.moved, earlier.closed) == (verdict.expires_at, False, False)
    later = verdict.expires_at + timedelta(seconds=60)
    moved = await in_uow(ports, lambda uow: uow.holds.extend(request.hold_id, later, 600))
    assert (moved.expires_at, moved.moved) == (later, True)
    capped = await in_uow(ports, lambda uow: uow.holds.extend(request.hold_id, later + timedelta(hours=1), 600))
    assert (capped.expires_at, capped.moved) == (created + timedelta(seconds=600), True)
    assert (await ports.get(request.hold_id)).expires_at == created + timedelta(seconds=600)
    again = await in_uow(ports, lambda uow: uow.holds.extend(request.hold_id, later + timedelta(hours=1), 600))
    assert (again.expires_at, again.moved) == (created + timedelta(seconds=600), False)


async def test_an_extension_leaves_closed_sales_and_ended_holds_as_they_are(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    live, verdict = await ports.take(sid, ["A1"], ttl=60)
    far = verdict.expires_at + timedelta(minutes=5)
    closed = await in_uow(ports, lambda uow: uow.holds.extend(live.hold_id, far, 600, close_minutes=150))
    assert (closed.expires_at, closed.moved, closed.closed) == (verdict.expires_at, False, True)
    expired, _ = await ports.take(sid, ["A2"], ttl=0.3)
    released, _ = await ports.take(sid, ["A3"])
    await in_uow(ports, lambda uow: uow.holds.release(released.hold_id, "CANCELLED"))
    await ports.elapse(0.6)
    for ended in (expired, released):
        assert await in_uow(ports, lambda uow, e=ended: uow.holds.extend(e.hold_id, far, 600)) is None
    assert await in_uow(ports, lambda uow: uow.holds.extend(uuid.uuid4(), far, 600)) is None


async def test_the_gate_is_told_of_live_held_and_booked_seats_of_a_showtime_on_sale(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    live, verdict = await ports.take(sid, ["A1"])
    await ports.take(sid, ["A2"], ttl=0.3)
    sold = await ports.booked(sid, ["A3"])
    await ports.elapse(0.6)
    seats = await in_uow(ports, lambda uow: uow.holds.gate_seats(sid))
    assert [(s.code, s.hold_id) for s in seats] == [("A1", live.hold_id), ("A3", sold.hold_id)]
    assert seats[0].until == verdict.expires_at
    started = await ports.showtime(starts_in=-timedelta(minutes=1))
    assert await in_uow(ports, lambda uow: uow.holds.gate_seats(started)) is None
    assert await in_uow(ports, lambda uow: uow.holds.gate_seats(sid + 1)) is None


async def test_a_customer_cancels_a_booking_once_and_only_before_the_deadline(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    sold = await ports.booked(sid, ["A1", "A2"])
    held, _ = await ports.take(sid, ["A3"])

    def cancel(booking_id, reason="CUSTOMER", deadline=60.0):  # type: ignore[no-untyped-def]
        return in_uow(ports, lambda uow: uow.holds.cancel_booking(booking_id, reason, deadline))

    assert (await cancel(sold.booking_id, deadline=150)).outcome == "TOO_LATE"
    assert (await cancel(held.booking_id)).outcome == "NOT_BOOKED"
    assert (await cancel(uuid.uuid4())).outcome == "NOT_FOUND"
    done = await cancel(sold.booking_id)
    assert (done.outcome, done.hold_id, done.seats) == ("CANCELLED", sold.hold_id, ["A1", "A2"])
    assert (await cancel(sold.booking_id)).outcome == "ALREADY"
    assert (await ports.get(sold.hold_id)).status == "CANCELLED"
    event = (await ports.events(sold.booking_id))[-1]
    assert (event["type"], event["data"]["seats"], event["data"]["reason"]) == (
        "BookingCancelled", ["A1", "A2"], "CUSTOMER")
    assert (await ports.take(sid, ["A1", "A2"]))[1].expires_at is not None  # its seats are free again


async def test_a_showtime_s_cancellation_passes_the_deadline_and_lists_what_is_left_to_end(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    sold = await ports.booked(sid, ["A1"])
    held, _ = await ports.take(sid, ["A2"])
    released, _ = await ports.take(sid, ["A3"])
    await in_uow(ports, lambda uow: uow.holds.release(released.hold_id, "CANCELLED"))
    assert await in_uow(ports, lambda uow: uow.holds.cancel_showtime(sid + 1, "OPERATOR")) is None
    assert await in_uow(ports, lambda uow: uow.holds.cancel_showtime(sid, "OPERATOR")) is True
    assert await in_uow(ports, lambda uow: uow.holds.cancel_showtime(sid, "OPERATOR")) is False
    assert sid in await in_uow(ports, lambda uow: uow.holds.cancelled_with_live(10**6))
    live = await in_uow(ports, lambda uow: uow.holds.live_of_showtime(sid, 10))
    assert sorted(live) == sorted([(sold.hold_id, sold.booking_id, "BOOKED"), (held.hold_id, held.booking_id, "HELD")])
    assert await in_uow(ports, lambda uow: uow.holds.confirm(held.hold_id, uuid.uuid4(), 1200)) is False
    done = await in_uow(ports, lambda uow: uow.holds.cancel_booking(sold.booking_id, "SHOWTIME_CANCELLED", 150))
    assert done.outcome == "CANCELLED"
    await in_uow(ports, lambda uow: uow.holds.release(held.hold_id, "SHOWTIME_CANCELLED"))
    assert sid not in await in_uow(ports, lambda uow: uow.holds.cancelled_with_live(10**6))
