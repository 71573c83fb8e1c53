"""The door on Postgres (R18): one admission per booking whatever the doors do at once, offline scans synced with
the earliest winning, revoked, forged, tampered and misplaced tickets, the window, roles, and key rotation."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ticketing.events import decode_booking_event
from ticketing.tickets import (
    TicketPayload,
    b64url,
    private_key_from_seed,
    public_key_text,
    sign_ticket,
    unb64url,
)
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration

OTHER_SEED = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def showtime(svc: Any, starts_in: timedelta = timedelta(minutes=30), duration: int = 120) -> int:
    sid: int = await svc.showtime_of(startsAt=iso(datetime.now(UTC).replace(microsecond=0) + starts_in),
                                     durationMinutes=duration)
    return sid


async def booked(svc: Any, h: Any, sid: int, seats: list[str], customer: int | None = None) -> tuple[str, str, int]:
    """A booked booking of `seats`: (booking id, its ticket text as GET /bookings gives it, its customer)."""
    customer = customer or h.new_id()
    held = await svc.hold(sid, seats, customer)
    assert held.status_code == 201, held.text
    assert await svc.book(held.json()["bookingId"], 1200 * len(seats)) == "confirmed"
    mine = (await svc.client.get("/bookings", headers=h.auth(customer))).json()["bookings"]
    (booking,) = [b for b in mine if b["bookingId"] == held.json()["bookingId"]]
    return booking["bookingId"], booking["ticket"], customer


def scan(ticket: str, sid: int, door: str, **more: Any) -> dict[str, Any]:
    return {"ticket": ticket, "showtimeId": sid, "door": door, **more}


async def checked_in_events(db: Any, booking_id: str) -> list[Any]:
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 "
                          "ORDER BY id", booking_id)
    events = [decode_booking_event(r["e"].encode()) for r in rows]  # each valid in the event catalogue
    return [e for e in events if e.type == "TicketCheckedIn"]


async def test_a_ticket_admits_its_group_once_then_says_when_and_where(start, db, h) -> None:
    async with start() as svc:
        sid = await showtime(svc)
        booking_id, ticket, customer = await booked(svc, h, sid, ["F1", "F2"])
        staff = h.auth(h.new_id(), "staff")
        r = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "A"))
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"admitted", "bookingId", "seats", "tickets", "title", "startsAt"}
        assert (body["admitted"], body["bookingId"], body["seats"], body["title"]) == (True, booking_id,
                                                                                         ["F1", "F2"], "Test")
        assert [t["seat"] for t in body["tickets"]] == ["F1", "F2"]
        again = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "B"))
        assert again.status_code == 409 and again.json()["error"] == "ALREADY_CHECKED_IN", again.text
        assert again.json()["door"] == "A"
        at = datetime.fromisoformat(again.json()["at"])
        assert abs(at - datetime.now(UTC)) < timedelta(seconds=30)
        mine = (await svc.client.get("/bookings", headers=h.auth(customer))).json()["bookings"]
        assert datetime.fromisoformat(mine[0]["checkedInAt"]) == at
        counts = (await svc.client.get(f"/showtimes/{sid}/checkins", headers=staff)).json()
        assert counts == {"showtimeId": sid, "bookings": 1, "seats": 2, "admittedBookings": 1, "admittedSeats": 2}
    (event,) = await checked_in_events(db, booking_id)
    assert (event.data.door, event.data.at, event.showtimeId, event.customerId) == ("A", at, sid, customer)


@pytest.mark.parametrize("doors", [2, 8])
async def test_doors_scanning_one_ticket_at_once_admit_exactly_one(start, db, h, doors: int) -> None:
    async with start() as svc:
        sid = await showtime(svc)
        booking_id, ticket, _ = await booked(svc, h, sid, ["F3", "F4", "F5"])
        staff = h.auth(h.new_id(), "staff")
        for _trial in range(3 if doors == 2 else 1):
            await db.execute("UPDATE booking SET checked_in_at = NULL, checked_in_door = NULL "
                             "WHERE booking_id = $1::uuid", booking_id)
            await db.execute("DELETE FROM outbox WHERE message_key = $1", booking_id)
            answers = await asyncio.gather(*[svc.client.post("/checkins", headers=staff,
                                                             json=scan(ticket, sid, f"D{n}"))
                                             for n in range(doors)])
            admitted = [n for n, a in enumerate(answers) if a.status_code == 200]
            assert len(admitted) == 1, [a.text for a in answers]
            winner = f"D{admitted[0]}"
            recorded = await db.fetchrow("SELECT checked_in_at, checked_in_door FROM booking "
                                         "WHERE booking_id = $1::uuid", booking_id)
            assert recorded["checked_in_door"] == winner
            for a in answers:
                if a.status_code != 200:
                    assert a.status_code == 409 and a.json()["error"] == "ALREADY_CHECKED_IN", a.text
                    assert a.json()["door"] == winner
                    assert datetime.fromisoformat(a.json()["at"]) == recorded["checked_in_at"]
            assert [e.data.door for e in await checked_in_events(db, booking_id)] == [winner]


async def test_a_ticket_scanned_offline_at_two_doors_then_synced_admits_the_earliest(start, db, h) -> None:
    async with start() as svc:
        sid = await showtime(svc, starts_in=timedelta(minutes=10))
        booking_id, ticket, customer = await booked(svc, h, sid, ["F6"])
        staff = h.auth(h.new_id(), "staff")
        t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
        later, earlier = scan(ticket, sid, "B", at=iso(t0 + timedelta(seconds=40))), scan(ticket, sid, "A", at=iso(t0))
        # Door B comes back online first: its scan is the admission known so far.
        first = (await svc.client.post("/checkins/batch", headers=staff, json={"scans": [later]})).json()
        assert first["results"][0]["admitted"] is True
        # Door A's scan was earlier: it is the admission; B's, sent again, now says when and where.
        second = await svc.client.post("/checkins/batch", headers=staff, json={"scans": [earlier]})
        assert second.status_code == 200 and second.json()["results"][0]["admitted"] is True, second.text
        again = (await svc.client.post("/checkins/batch", headers=staff, json={"scans": [later, earlier]})).json()
        assert [r["admitted"] for r in again["results"]] == [False, True]  # A's repeat: its own answer again
        assert again["results"][0] | {"message": ""} == {"admitted": False, "error": "ALREADY_CHECKED_IN",
                                                         "message": "", "at": iso(t0), "door": "A"}
        online = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "C"))
        assert online.status_code == 409 and (online.json()["door"], online.json()["at"]) == ("A", iso(t0))
        mine = (await svc.client.get("/bookings", headers=h.auth(customer))).json()["bookings"]
        assert mine[0]["checkedInAt"] == iso(t0)
    assert len(await checked_in_events(db, booking_id)) == 1  # once per booking: the first admission recorded


async def test_one_batch_with_two_doors_scans_of_a_ticket_admits_the_earlier_and_answers_in_order(start, h) -> None:
    async with start() as svc:
        sid = await showtime(svc, starts_in=timedelta(minutes=10))
        _, ticket, _ = await booked(svc, h, sid, ["F7"])
        _, other, _ = await booked(svc, h, sid, ["F8"])
        staff = h.auth(h.new_id(), "staff")
        t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=3)
        scans = [scan(ticket, sid, "B", at=iso(t0 + timedelta(seconds=5))), scan(other, sid, "B", at=iso(t0)),
                 scan(ticket, sid, "A", at=iso(t0)), scan(other, sid, "B", at=iso(t0 + timedelta(days=1)))]
        r = await svc.client.post("/checkins/batch", headers=staff, json={"scans": scans})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [(x["admitted"], x.get("error")) for x in results] == [
            (False, "ALREADY_CHECKED_IN"), (True, None), (True, None), (False, "VALIDATION_ERROR")]
        assert (results[0]["door"], results[0]["at"]) == ("A", iso(t0))
        # An online admission recorded first, then an offline scan made before it: the earliest is the record.
        _, third, _ = await booked(svc, h, sid, ["F9"])
        assert (await svc.client.post("/checkins", headers=staff, json=scan(third, sid, "C"))).status_code == 200
        before = scan(third, sid, "D", at=iso(t0))
        synced = (await svc.client.post("/checkins/batch", headers=staff, json={"scans": [before]})).json()
        assert synced["results"][0]["admitted"] is True
        late = await svc.client.post("/checkins", headers=staff, json=scan(third, sid, "C"))
        assert (late.json()["door"], late.json()["at"]) == ("D", iso(t0))


async def test_batches_are_bounded_and_need_the_staff_role(start, h) -> None:
    async with start(checkin_batch_max_scans=3) as svc:
        sid = await showtime(svc)
        _, ticket, _ = await booked(svc, h, sid, ["F1"])
        at = iso(datetime.now(UTC))
        body = {"scans": [scan(ticket, sid, "A", at=at)] * 4}
        r = await svc.client.post("/checkins/batch", headers=h.auth(h.new_id(), "staff"), json=body)
        assert r.status_code == 422 and r.json()["error"] == "VALIDATION_ERROR", r.text
        assert (await svc.client.post("/checkins/batch", headers=h.auth(h.new_id()), json=body)).status_code == 403
        assert (await svc.client.post("/checkins/batch", json=body)).status_code == 401


async def test_revoked_tickets_are_refused(start, h) -> None:
    async with start(cancellation_deadline_minutes=0) as svc:
        sid = await showtime(svc)
        staff = h.auth(h.new_id(), "staff")
        booking_id, ticket, customer = await booked(svc, h, sid, ["F1"])
        cancel = await svc.client.post(f"/bookings/{booking_id}/cancel", headers=h.auth(customer))
        assert cancel.status_code == 202, cancel.text
        r = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "A"))
        assert r.status_code == 409 and r.json()["error"] == "TICKET_REVOKED", r.text
        _, kept, _ = await booked(svc, h, sid, ["F2"])
        admitted = await svc.client.post("/checkins", headers=staff, json=scan(kept, sid, "A"))
        assert admitted.status_code == 200  # the door already admitted it; then the operator cancels the showtime
        cancelled = await svc.client.post(f"/admin/showtimes/{sid}/cancel", headers=h.auth(1, "admin"),
                                          json={"reason": "projector failure"})
        assert cancelled.status_code == 202, cancelled.text
        for text in (ticket, kept):
            r = await svc.client.post("/checkins", headers=staff, json=scan(text, sid, "B"))
            assert r.status_code == 409 and r.json()["error"] == "TICKET_REVOKED", r.text
        offline = await svc.client.post("/checkins/batch", headers=staff,
                                        json={"scans": [scan(kept, sid, "B", at=iso(datetime.now(UTC)))]})
        assert offline.json()["results"][0]["error"] == "TICKET_REVOKED"


async def test_forged_tampered_and_misplaced_tickets_are_refused(start, db, h) -> None:
    async with start() as svc:
        sid = await showtime(svc)
        other_sid = await showtime(svc)
        staff = h.auth(h.new_id(), "staff")
        booking_id, ticket, _ = await booked(svc, h, sid, ["F1"])
        payload = TicketPayload(booking_id, sid, ("F1",))
        forged = sign_ticket(payload, private_key_from_seed(OTHER_SEED))
        raw = json.loads(unb64url(ticket.split(".")[0]))
        tampered = b64url(json.dumps({**raw, "seats": ["F1", "F2"]}, separators=(",", ":")).encode())
        for text in (forged, f"{tampered}.{ticket.split('.')[1]}", "hello", ticket[:-2], "", "x" * 5000):
            r = await svc.client.post("/checkins", headers=staff, json=scan(text, sid, "A"))
            assert r.status_code == 422 and r.json()["error"] == "TICKET_INVALID", (text[:20], r.text)
        unknown = svc.deps.tickets.sign(replace(payload, booking_id=str(uuid.uuid4())))
        r = await svc.client.post("/checkins", headers=staff, json=scan(unknown, sid, "A"))
        assert r.status_code == 422 and r.json()["error"] == "TICKET_INVALID"  # signed, but no such booking
        r = await svc.client.post("/checkins", headers=staff, json=scan(ticket, other_sid, "A"))
        assert r.status_code == 409 and r.json()["error"] == "WRONG_SHOWTIME", r.text
        assert await db.fetchval("SELECT checked_in_at FROM booking WHERE booking_id = $1::uuid", booking_id) is None
        assert (await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "A"))).status_code == 200


async def test_the_door_opens_checkin_opens_minutes_before_the_start_and_closes_at_the_end(start, db, h) -> None:
    async with start(checkin_opens_minutes=60) as svc:
        sid = await showtime(svc, starts_in=timedelta(minutes=61), duration=90)
        staff = h.auth(h.new_id(), "staff")
        _, ticket, _ = await booked(svc, h, sid, ["F1"])
        early = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "A"))
        assert early.status_code == 409 and early.json()["error"] == "TOO_EARLY", early.text
        await db.execute("UPDATE showtime SET starts_at = now() - interval '91 minutes' WHERE showtime_id = $1", sid)
        over = await svc.client.post("/checkins", headers=staff, json=scan(ticket, sid, "A"))
        assert over.status_code == 409 and over.json()["error"] == "CHECKIN_CLOSED", over.text
        during = iso(datetime.now(UTC) - timedelta(minutes=85))  # an offline scan made while the film ran
        synced = await svc.client.post("/checkins/batch", headers=staff, json={"scans": [scan(ticket, sid, "A",
                                                                                              at=during)]})
        assert synced.json()["results"][0]["admitted"] is True, synced.text


async def test_only_staff_check_in(start, h) -> None:
    async with start() as svc:
        sid = await showtime(svc)
        _, ticket, customer = await booked(svc, h, sid, ["F1"])
        body = scan(ticket, sid, "A")
        for role in ("customer", "admin", "service"):
            r = await svc.client.post("/checkins", headers=h.auth(customer, role), json=body)
            assert r.status_code == 403 and r.json()["error"] == "FORBIDDEN", (role, r.text)
        assert (await svc.client.post("/checkins", json=body)).status_code == 401
        assert (await svc.client.get(f"/showtimes/{sid}/checkins", headers=h.auth(customer))).status_code == 403
        assert (await svc.client.get(f"/showtimes/{sid}/checkins", headers=h.auth(1, "admin"))).status_code == 200


async def test_a_rotated_key_keeps_the_tickets_already_sent(start, h) -> None:
    old = private_key_from_seed(OTHER_SEED)
    new_seed = "bm90aWZpZXItdGVzdC1zZWVkLTMyLWJ5dGVzLWxvbmc="
    async with start(qr_signing_key=new_seed, qr_verify_keys=public_key_text(old)) as svc:
        sid = await showtime(svc)
        booking_id, _, _ = await booked(svc, h, sid, ["F1"])
        _, other_ticket, _ = await booked(svc, h, sid, ["F2"])
        sent_before = sign_ticket(TicketPayload(booking_id, sid, ("F1",)), old)  # the e-mail of last week
        keys = (await svc.client.get("/tickets/public-key")).json()
        new_public = public_key_text(private_key_from_seed(new_seed))
        assert [k["x"] for k in keys["keys"]] == [new_public, public_key_text(old)]
        assert keys["publicKey"] == new_public and keys["kid"] == keys["keys"][0]["kid"]
        assert json.loads(unb64url(other_ticket.split(".")[0]))["k"] == keys["kid"]  # new tickets: the new key
        staff = h.auth(h.new_id(), "staff")
        r = await svc.client.post("/checkins", headers=staff, json=scan(sent_before, sid, "A"))
        assert r.status_code == 200, r.text
        assert (await svc.client.post("/checkins", headers=staff, json=scan(other_ticket, sid, "A"))).status_code == 200
    async with start() as svc:  # a service that does not list the old key refuses its tickets
        r = await svc.client.post("/checkins", headers=h.auth(h.new_id(), "staff"), json=scan(sent_before, sid, "B"))
        assert r.status_code == 422 and r.json()["error"] == "TICKET_INVALID"
