"""Cancellations through the API on Postgres: a customer's booking (the deadline, the owner, the seat map's
version) and an operator's showtime while customers hold and pay (nothing left held or booked, every booking
cancelled once, the events still replay the seat map)."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hold_service.service_layer.cancellations import finish_cancelled_showtimes
from ticketing.events import decode_booking_event
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def outbox(db, sid: int) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox ORDER BY id DESC LIMIT 2000")
    return [e for e in (json.loads(r["e"]) for r in reversed(rows)) if e.get("showtimeId") == sid]


async def test_booking_confirmed_names_film_cinema_hall_start_and_each_ticket(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(title="Dune: Part Three", startsAt="2031-03-01T19:30:00Z", cinema="Lisboa",
                                    hall="Sala 3", timeZone="Europe/Lisbon")
        held = (await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(h.new_id()),
                                      json={"seats": [{"code": "F2", "ticketType": "CHILD"}, "F1"]})).json()
        assert await svc.book(held["bookingId"], 1700) == "confirmed"
    (confirmed,) = [e for e in await outbox(db, sid) if e["type"] == "BookingConfirmed"]
    parsed = decode_booking_event(json.dumps(confirmed).encode())  # valid in the event catalogue
    assert (parsed.data.title, parsed.data.cinema, parsed.data.hall, parsed.data.timeZone) == (
        "Dune: Part Three", "Lisboa", "Sala 3", "Europe/Lisbon")
    assert parsed.data.startsAt == datetime(2031, 3, 1, 19, 30, tzinfo=UTC)
    assert [(t.seat, t.category, t.ticketType, t.priceCents) for t in parsed.data.tickets] == [
        ("F1", "STANDARD", "ADULT", 1200), ("F2", "STANDARD", "CHILD", 800)]
    assert (parsed.data.amountCents, parsed.data.discountCents) == (1700, 300)


async def test_a_customer_cancels_until_the_deadline_and_the_seats_go_back_on_sale(start, db, h) -> None:
    async with start(cancellation_deadline_minutes=60) as svc:
        sid = await svc.showtime_of(startsAt=iso(datetime.now(UTC) + timedelta(hours=3)))
        me = h.new_id()
        held = (await svc.hold(sid, ["F1", "F2"], me)).json()
        early = await svc.client.post(f"/bookings/{held['bookingId']}/cancel", headers=h.auth(me))
        assert early.status_code == 409 and early.json()["error"] == "HOLD_NOT_ACTIVE"  # a hold, not a booking
        payment = uuid.uuid4()
        assert await svc.book(held["bookingId"], 2400, payment) == "confirmed"
        url = f"/bookings/{held['bookingId']}/cancel"
        other = await svc.client.post(url, headers=h.auth(h.new_id()))
        assert other.status_code == 404 and other.json()["error"] == "NOT_FOUND"
        await numbered(db)  # the booking's version, which its worker's numberer would give
        version = await db.fetchval("SELECT seat_map_version FROM showtime WHERE showtime_id = $1", sid)
        r = await svc.client.post(url, headers=h.auth(me))
        assert r.status_code == 202 and r.json() == {"bookingId": held["bookingId"], "status": "CANCELLED"}, r.text
        assert (await svc.client.post(url, headers=h.auth(me))).status_code == 202  # a repeat changes nothing

        async def back_on_sale() -> bool:
            body = (await svc.client.get(f"/showtimes/{sid}/seats")).json()
            return body["version"] == version + 1 and {s["status"] for s in body["seats"][:2]} == {"AVAILABLE"}
        assert await eventually(back_on_sale, timeout=5, interval=0.05)
        assert (await svc.hold(sid, ["F2", "F1"])).status_code == 201  # the gate let them go too
        mine = (await svc.client.get("/bookings", headers=h.auth(me))).json()["bookings"]
        assert [(b["status"], b["ticket"]) for b in mine] == [("CANCELLED", None)]
        late = (await svc.hold(sid, ["F5"], me)).json()
        assert await svc.book(late["bookingId"], 1200) == "confirmed"
        await db.execute("UPDATE showtime SET starts_at = now() + interval '59 minutes' WHERE showtime_id = $1", sid)
        closed = await svc.client.post(f"/bookings/{late['bookingId']}/cancel", headers=h.auth(me))
        assert closed.status_code == 409 and closed.json()["error"] == "CANCELLATION_CLOSED", closed.text
    cancelled = [e for e in await outbox(db, sid) if e["type"] == "BookingCancelled"]
    assert [(e["bookingId"], e["data"]["reason"], e["data"]["paymentId"], e["data"]["seats"]) for e in cancelled] == [
        (held["bookingId"], "CUSTOMER", str(payment), ["F1", "F2"])]
    assert await db.fetchval("SELECT status FROM booking WHERE booking_id = $1::uuid", late["bookingId"]) == "BOOKED"


async def test_an_operator_cancels_a_showtime_while_customers_hold_and_pay(start, db, h) -> None:
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(layout=[{"row": "F", "blocks": [{"from": 1, "to": 40}]}])
        holds = [(await svc.hold(sid, [f"F{n}", f"F{n + 20}"])).json() for n in range(1, 21)]
        for held in holds[:10]:
            assert await svc.book(held["bookingId"], 2400) == "confirmed"
        admin = h.auth(1, "admin")

        async def late_payment(held: dict[str, Any]) -> str:
            return await svc.book(held["bookingId"], 2400)
        cancel = svc.client.post(f"/admin/showtimes/{sid}/cancel", headers=admin, json={"reason": "projector failure"})
        racing = await asyncio.gather(cancel, *(late_payment(x) for x in holds[10:]),
                                      *(svc.hold(sid, [f"F{n}"]) for n in range(1, 41)))
        assert racing[0].status_code == 202, racing[0].text
        assert set(racing[1:11]) <= {"confirmed", "HOLD_RELEASED"}
        assert {r.status_code for r in racing[11:]} <= {409}
        again = await svc.client.post(f"/admin/showtimes/{sid}/cancel", headers=admin, json={"reason": "again"})
        assert again.status_code == 202  # finishes whatever the first left (a payment confirmed meanwhile)
        assert (await svc.hold(sid, ["F1"])).json()["error"] == "SHOWTIME_CLOSED"
        listed = (await svc.client.get("/showtimes", params={"from": "2029-12-31T00:00:00Z",
                                                             "cinema": "Cine"})).json()["showtimes"]
        assert {s["status"] for s in listed if s["showtimeId"] == sid} == {"CANCELLED"}
    assert await db.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status <> 'AVAILABLE'",
                             sid) == 0
    statuses = await db.fetch("SELECT booking_id::text, status FROM booking WHERE showtime_id = $1", sid)
    assert {r["status"] for r in statuses} <= {"CANCELLED", "RELEASED"}
    events = await outbox(db, sid)
    booked = {e["bookingId"] for e in events if e["type"] == "BookingConfirmed"}
    cancelled = [e["bookingId"] for e in events if e["type"] == "BookingCancelled"]
    assert sorted(cancelled) == sorted(booked) and len(booked) >= 10  # each booking cancelled exactly once
    assert {r["booking_id"] for r in statuses if r["status"] == "CANCELLED"} == booked
    assert [e["type"] for e in events].count("ShowtimeCancelled") == 1
    # the seat map's events, applied in version order, give the map: gapless, every seat AVAILABLE at the end
    changes = sorted((e for e in events if "seatMapVersion" in e["data"]), key=lambda e: e["data"]["seatMapVersion"])
    assert [e["data"]["seatMapVersion"] for e in changes] == list(range(1, len(changes) + 1))
    seats = {f"F{n}": "AVAILABLE" for n in range(1, 41)}
    status_of = {"SeatsHeld": "HELD", "SeatsReleased": "AVAILABLE", "BookingConfirmed": "BOOKED",
                 "BookingCancelled": "AVAILABLE"}
    for e in changes:
        for seat in e["data"]["seats"]:
            seats[seat] = status_of[e["type"]]
    assert set(seats.values()) == {"AVAILABLE"}


async def test_the_sweeper_finishes_what_an_interrupted_cancellation_left(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of()
        booked = (await svc.hold(sid, ["F1", "F2"])).json()
        assert await svc.book(booked["bookingId"], 2400) == "confirmed"
        held = (await svc.hold(sid, ["F3"])).json()
        await db.execute("UPDATE showtime SET status = 'CANCELLED' WHERE showtime_id = $1", sid)  # then it stopped
        assert await finish_cancelled_showtimes(svc.deps) >= 2
        assert (await svc.hold(sid, ["F4"])).json()["error"] == "SHOWTIME_CLOSED"
    rows = await db.fetch("SELECT booking_id::text, status FROM booking WHERE showtime_id = $1", sid)
    assert {r["booking_id"]: r["status"] for r in rows} == {booked["bookingId"]: "CANCELLED",
                                                            held["bookingId"]: "RELEASED"}
    assert await db.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id = $1 AND status <> 'AVAILABLE'",
                             sid) == 0
