"""What's on (GET /showtimes), my bookings (GET /bookings) and sales closing at the start, on Postgres."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
import qrcode
import qrcode.constants
from hold_service.adapters import repository
from hold_service.domain.catalogue import cursor
from qrcode.image.svg import SvgPathImage
from ticketing.tickets import (
    TicketPayload,
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    verify_ticket,
)
from ticketing_testing import eventually

pytestmark = pytest.mark.integration


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_the_catalogue_lists_a_window_by_start_with_each_showtime_s_state(start, db, h) -> None:
    base = datetime(2031, 5, 1, 18, tzinfo=UTC) + timedelta(minutes=h.new_id() % 100_000)
    cinema = f"Cine {h.new_id()}"
    async with start(catalogue_cache_seconds=0) as svc:
        later = await svc.showtime_of(startsAt=iso(base + timedelta(hours=3)), cinema=cinema, title="Later")
        first = await svc.showtime_of(startsAt=iso(base), cinema=cinema, title="First", durationMinutes=120,
                                      layout=[{"row": "A", "blocks": [{"from": 1, "to": 2}]}],
                                      prices={"STANDARD": {"ADULT": 900, "CHILD": 500}})
        await svc.showtime_of(startsAt=iso(base + timedelta(hours=1)), cinema="Elsewhere")
        await svc.showtime_of(startsAt=iso(base + timedelta(days=9)), cinema=cinema)  # past the week
        params = {"from": iso(base), "cinema": cinema}
        r = await svc.client.get("/showtimes", params=params)  # public: no token
        assert r.status_code == 200, r.text
        listed = r.json()["showtimes"]
        assert [s["showtimeId"] for s in listed] == [first, later]
        assert listed[0] == {"showtimeId": first, "title": "First", "startsAt": iso(base), "durationMinutes": 120,
                             "cinema": cinema, "hall": "1", "timeZone": "UTC", "status": "ON_SALE",
                             "seatsAvailable": 2, "fromPriceCents": 500, "currency": "EUR", "waitingRoom": False}
        assert (await svc.hold(first, ["A1", "A2"])).status_code == 201
        await db.execute("UPDATE showtime SET status = 'CANCELLED' WHERE showtime_id = $1", later)
        now = (await svc.client.get("/showtimes", params=params)).json()["showtimes"]
        assert [(s["status"], s["seatsAvailable"]) for s in now] == [("SOLD_OUT", 0), ("CANCELLED", 10)]
        await db.execute("UPDATE showtime SET starts_at = now() - interval '1 minute' WHERE showtime_id = $1", first)
        past = await svc.client.get("/showtimes", params={"from": iso(datetime.now(UTC) - timedelta(hours=1)),
                                                         "to": iso(datetime.now(UTC)), "cinema": cinema})
        assert [s["status"] for s in past.json()["showtimes"]] == ["CLOSED"]


async def test_a_window_of_more_showtimes_than_a_page_is_listed_whole_by_following_next(start, h) -> None:
    base = datetime(2032, 3, 1, 18, tzinfo=UTC) + timedelta(minutes=h.new_id() % 100_000)
    cinema = f"Cine {h.new_id()}"
    async with start(catalogue_cache_seconds=0, catalogue_page_size=2) as svc:
        starts = [base, base, base, base + timedelta(hours=1), base + timedelta(hours=2)]  # three at 18:xx: ties
        made = [await svc.showtime_of(startsAt=iso(t), cinema=cinema) for t in starts]
        await svc.showtime_of(startsAt=iso(base), cinema="Elsewhere")
        url, pages, listed = f"/showtimes?{urlencode({'from': iso(base), 'cinema': cinema})}", 0, []
        while url:
            r = await svc.client.get(url)
            assert r.status_code == 200, r.text
            listed += [s["showtimeId"] for s in r.json()["showtimes"]]
            url, pages = r.json()["next"], pages + 1
        assert (listed, pages) == (sorted(made[:3]) + made[3:], 3)  # by start, then id; each once
        last = await svc.client.get("/showtimes", params={"from": iso(base), "cinema": cinema,
                                                          "after": cursor(base + timedelta(hours=1), made[3])})
        assert [s["showtimeId"] for s in last.json()["showtimes"]] == [made[4]] and last.json()["next"] is None
        whole = await svc.client.get("/showtimes", params={"from": iso(base), "cinema": cinema,
                                                           "after": cursor(base - timedelta(days=1), 1)})
        assert [s["showtimeId"] for s in whole.json()["showtimes"]] == sorted(made[:3])[:2]


@pytest.mark.parametrize("after", ["x", "2032-03-01T18:00:00Z", "2032-03-01T18:00:00_12", "2032-03-01T18:00:00Z_",
                                   "2032-03-01T18:00:00Z_-4", "2032-03-01T18:00:00Z_" + "9" * 19,
                                   "0999-03-01T18:00:00Z_1", "2032-03-01T18:00:00Z_\u0663"])
async def test_an_after_that_is_not_a_next_s_is_422(start, after) -> None:
    async with start() as svc:
        r = await svc.client.get("/showtimes", params={"after": after})
        assert r.status_code == 422 and r.json()["problems"][0]["loc"] == ["query", "after"], r.text


@pytest.mark.parametrize("params", [{"from": "yesterday"}, {"from": "2031-01-01T00:00:00"},
                                    {"from": "2031-01-02T00:00:00Z", "to": "2031-01-01T00:00:00Z"},
                                    {"from": "2031-01-01T00:00:00Z", "to": "2031-06-01T00:00:00Z"},
                                    {"cinema": "x" * 201}, {"cinema": "Lux\x00 Hanoi"},
                                    {"from": "1039-08-13T16:04:04Z"}, {"to": "9999-12-31T23:59:59-12:00"}])
async def test_a_bad_catalogue_question_is_422(start, params) -> None:
    async with start() as svc:
        r = await svc.client.get("/showtimes", params=params)
        assert r.status_code == 422 and r.json()["error"] == "VALIDATION_ERROR", r.text


async def test_the_catalogue_is_asked_of_postgres_once_per_page_and_revalidated_by_etag(start, h, monkeypatch) -> None:
    asked = []
    real = repository.PgHoldRepository.catalogue

    async def counted(self, *args):  # type: ignore[no-untyped-def]
        asked.append(args)
        await asyncio.sleep(0.05)  # a slow answer: everyone who asks meanwhile waits for this one
        return await real(self, *args)

    monkeypatch.setattr(repository.PgHoldRepository, "catalogue", counted)
    cinema = f"Cine {h.new_id()}"
    async with start(catalogue_cache_seconds=0.5) as svc:
        sid = await svc.showtime_of(startsAt="2031-02-01T20:00:00Z", cinema=cinema)
        params = {"from": "2031-02-01T00:00:00Z", "cinema": cinema}
        answers = await asyncio.gather(*(svc.client.get("/showtimes", params=params) for _ in range(30)))
        assert len(asked) == 1 and {a.status_code for a in answers} == {200}
        etag = answers[0].headers["etag"]
        assert {a.headers["etag"] for a in answers} == {etag} and {a.content for a in answers} == {answers[0].content}
        same = await svc.client.get("/showtimes", params=params, headers={"If-None-Match": etag})
        assert same.status_code == 304 and same.content == b""
        assert (await svc.hold(sid, ["F1"])).status_code == 201

        async def moved() -> bool:
            r = await svc.client.get("/showtimes", params=params, headers={"If-None-Match": etag})
            listed = r.json()["showtimes"] if r.status_code == 200 else [{}]
            return listed[0].get("seatsAvailable") == 9 and r.headers["etag"] != etag
        assert await eventually(moved, timeout=5, interval=0.1)


async def test_the_catalogue_under_concurrent_holds_counts_seats_from_one_snapshot(start, h) -> None:
    cinema = f"Cine {h.new_id()}"
    async with start(catalogue_cache_seconds=0, hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(startsAt="2031-03-01T20:00:00Z", cinema=cinema,
                                    layout=[{"row": "F", "blocks": [{"from": 1, "to": 40}]}])
        params = {"from": "2031-03-01T00:00:00Z", "cinema": cinema}
        seen: list[int] = []

        async def read() -> None:
            for _ in range(15):
                listed = (await svc.client.get("/showtimes", params=params)).json()["showtimes"]
                seen.append(listed[0]["seatsAvailable"])
        holds = [svc.hold(sid, [f"F{n}", f"F{n + 20}"]) for n in range(1, 21)]
        *answers, _ = await asyncio.gather(*holds, read())
        assert [a.status_code for a in answers] == [201] * 20
        assert all(n % 2 == 0 and 0 <= n <= 40 for n in seen), seen  # two seats a hold, never half of one
        final = (await svc.client.get("/showtimes", params=params)).json()["showtimes"][0]
        assert (final["seatsAvailable"], final["status"]) == (0, "SOLD_OUT")


async def test_my_bookings_are_mine_newest_first_with_the_ticket_of_a_booked_one(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(startsAt="2031-04-01T19:30:00Z", cinema="Lisboa", hall="Sala 3",
                                    timeZone="Europe/Lisbon")
        me, other = h.new_id(), h.new_id()
        older = (await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(me),
                                       json={"seats": [{"code": "F2", "ticketType": "CHILD"}, "F1"]})).json()
        newer = (await svc.hold(sid, ["F5"], me)).json()
        assert (await svc.hold(sid, ["F7"], other)).status_code == 201
        assert await svc.book(older["bookingId"], 2000) == "confirmed"
        r = await svc.client.get("/bookings", headers=h.auth(me))
        assert r.status_code == 200, r.text
        listed = r.json()["bookings"]
        assert [b["bookingId"] for b in listed] == [newer["bookingId"], older["bookingId"]]
        booked = listed[1]
        assert {k: booked[k] for k in ("showtimeId", "title", "startsAt", "cinema", "hall", "timeZone", "seats",
                                       "status", "amountCents", "checkedInAt")} == {
            "showtimeId": sid, "title": "Test", "startsAt": "2031-04-01T19:30:00Z", "cinema": "Lisboa",
            "hall": "Sala 3", "timeZone": "Europe/Lisbon", "seats": ["F1", "F2"], "status": "BOOKED",
            "amountCents": 2000, "checkedInAt": None}
        assert [t["ticketType"] for t in booked["tickets"]] == ["ADULT", "CHILD"]
        key = private_key_from_seed(svc.deps.settings.qr_signing_key)  # the notifier's key too (QR_SIGNING_KEY)
        payload = verify_ticket(booked["ticket"], public_key_from_text(public_key_text(key)))
        assert payload == TicketPayload(older["bookingId"], sid, ("F1", "F2"))  # what the e-mail's QR holds
        assert listed[0]["status"] == "HELD" and listed[0]["ticket"] is None
        others = (await svc.client.get("/bookings", headers=h.auth(other))).json()["bookings"]
        assert [b["seats"] for b in others] == [["F7"]]
        assert (await svc.client.get("/bookings")).status_code == 401
        assert (await svc.client.get("/bookings", headers=h.auth(h.new_id()))).json() == {"bookings": []}


async def test_sales_close_before_the_start_for_holds_and_checkouts(start, db, h) -> None:
    soon = datetime.now(UTC) + timedelta(minutes=20)
    async with start(sales_close_minutes_before_start=30) as svc:
        closing = await svc.showtime_of(startsAt=iso(soon))
        open_one = await svc.showtime_of(startsAt=iso(soon + timedelta(minutes=20)))
        refused = await svc.hold(closing, ["F1"])
        assert refused.status_code == 409 and refused.json()["error"] == "SHOWTIME_CLOSED", refused.text
        assert (await svc.client.post(f"/showtimes/{closing}/holds", headers=h.auth(h.new_id()),
                                      json={"seats": ["F1", "F2"]})).status_code == 409
        assert {s["status"] for s in (await h.seat_rows(db, closing)).values()} == {"AVAILABLE"}
        held = (await svc.hold(open_one, ["F1"])).json()
        # time passes: the showtime now starts within the 30 minutes
        await db.execute("UPDATE showtime SET starts_at = now() + interval '10 minutes' WHERE showtime_id = $1",
                         open_one)
        until = iso(datetime.now(UTC) + timedelta(minutes=8))
        r = await svc.client.post(f"/holds/{held['holdId']}/extend", json={"until": until},
                                  headers=h.auth(0, "service"))
        assert r.status_code == 409 and r.json()["error"] == "SHOWTIME_CLOSED", r.text
        row = await db.fetchrow("SELECT status, expires_at FROM booking WHERE hold_id = $1::uuid", held["holdId"])
        assert row["status"] == "HELD" and row["expires_at"].isoformat() == held["expiresAt"].replace("Z", "+00:00")
        again = await svc.hold(open_one, ["F2"])
        assert again.status_code == 409 and again.json()["error"] == "SHOWTIME_CLOSED"


async def test_holds_written_together_are_all_refused_once_sales_close(start, db, h) -> None:
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(startsAt=iso(datetime.now(UTC) - timedelta(minutes=1)))
        answers = await asyncio.gather(*(svc.hold(sid, [f"F{n}"]) for n in range(1, 11)))
        assert {(a.status_code, a.json()["error"]) for a in answers} == {(409, "SHOWTIME_CLOSED")}
    assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1", sid) == 0


async def test_a_closed_showtime_s_queue_is_not_joined(start, db, h, rooms) -> None:
    async with start(sales_close_minutes_before_start=30, waiting_room_cache_seconds=0) as svc:
        sid = await svc.showtime_of(startsAt=iso(datetime.now(UTC) + timedelta(hours=2)))
        await rooms.configure(svc, sid, 5)
        assert (await rooms.join(svc.client, sid, h.new_id())).status_code == 202
        await db.execute("UPDATE showtime SET starts_at = now() + interval '29 minutes' WHERE showtime_id = $1", sid)
        late = await rooms.join(svc.client, sid, h.new_id())
        assert late.status_code == 409 and late.json()["error"] == "SHOWTIME_CLOSED", late.text


async def test_a_booked_booking_s_qr_is_its_owner_s_and_encodes_its_ticket(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of()
        me = h.new_id()
        held = (await svc.hold(sid, ["F3"], me)).json()
        url = f"/bookings/{held['bookingId']}/qr"
        assert (await svc.client.get(url, headers=h.auth(me))).status_code == 404  # not booked yet
        assert await svc.book(held["bookingId"], 1200) == "confirmed"
        r = await svc.client.get(url, headers=h.auth(me))
        assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml", r.text
        (booking,) = (await svc.client.get("/bookings", headers=h.auth(me))).json()["bookings"]
        expected = io.BytesIO()
        qrcode.make(booking["ticket"], image_factory=SvgPathImage,
                    error_correction=qrcode.constants.ERROR_CORRECT_M).save(expected)
        assert r.content == expected.getvalue()  # the QR of the signed ticket the list gives
        other = await svc.client.get(url, headers=h.auth(h.new_id()))
        assert other.status_code == 404 and other.json()["error"] == "NOT_FOUND"
        for page in ("/pages/", "/pages/bookings", "/pages/door"):
            shown = await svc.client.get(page)
            assert shown.status_code == 200 and shown.headers["content-type"].startswith("text/html")
            assert "default-src 'self'" in shown.headers["content-security-policy"]
