"""Halls, prices and priced holds through the API and the real writer (Postgres computes every amount)."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.integration

LAYOUT = [{"row": "A", "blocks": [{"from": 1, "to": 4, "category": "ACCESSIBLE"}, {"gap": 2}, {"from": 5, "to": 8}]},
          {"row": "K", "blocks": [{"from": 1, "to": 10, "category": "VIP"}]}]
PRICES = {"STANDARD": {"ADULT": 1200, "CHILD": 800, "SENIOR": 900}, "VIP": {"ADULT": 1800},
          "ACCESSIBLE": {"ADULT": 1200, "CHILD": 800}}


def full_form(sid: int, **changes: object) -> dict[str, object]:
    return {"showtimeId": sid, "title": "Dune: Part Three", "startsAt": "2030-03-01T19:30:00Z",
            "durationMinutes": 166, "cinema": "Lisboa Colombo", "hall": "Sala 3", "timeZone": "Europe/Lisbon",
            "layout": LAYOUT, "prices": PRICES, **changes}


async def test_a_hall_as_it_is_is_created_and_drawn_by_the_seat_map(start, h) -> None:
    async with start() as svc:
        sid = h.new_id()
        r = await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"), json=full_form(sid))
        assert r.status_code == 201 and r.json()["seatCount"] == 18 and r.json()["priceCents"] == 800, r.text
        body = (await svc.client.get(f"/showtimes/{sid}/seats")).json()
        assert {k: body[k] for k in ("title", "cinema", "hall", "timeZone", "durationMinutes", "prices")} == {
            "title": "Dune: Part Three", "cinema": "Lisboa Colombo", "hall": "Sala 3", "timeZone": "Europe/Lisbon",
            "durationMinutes": 166, "prices": PRICES}
        seats = {s["code"]: (s["category"], s["row"], s["x"]) for s in body["seats"]}
        assert (seats["A4"], seats["A5"], seats["K10"]) == (("ACCESSIBLE", "A", 4), ("STANDARD", "A", 7),
                                                            ("VIP", "K", 10))
        assert [s["code"] for s in body["seats"]][:9] == [*(f"A{n}" for n in range(1, 9)), "K1"]


@pytest.mark.parametrize("changes", [
    {"prices": {"STANDARD": {"ADULT": 1200}, "ACCESSIBLE": {"ADULT": 1200}}},  # VIP used, no ADULT price
    {"prices": {**PRICES, "VIP": {"CHILD": 900}}},
    {"rows": {"A": 5}},  # both forms
    {"layout": None},  # half a form
    {"timeZone": "Mars/Olympus_Mons"},
    {"prices": {**PRICES, "VIP": {"ADULT": -1}}},
    {"layout": [{"row": "A", "blocks": [{"from": 1, "to": 4, "category": "BALCONY"}]}]},
    {"prices": {**PRICES, "STANDARD": {"INFANT": 100}}},
])
async def test_a_bad_showtime_is_422_and_creates_nothing(start, db, h, changes) -> None:
    async with start() as svc:
        sid = h.new_id()
        r = await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"),
                                  json={k: v for k, v in full_form(sid, **changes).items() if v is not None})
        assert r.status_code == 422 and r.json()["error"] == "VALIDATION_ERROR", r.text
    assert await db.fetchval("SELECT count(*) FROM showtime WHERE showtime_id = $1", sid) == 0


async def test_the_old_form_still_makes_standard_seats_at_one_adult_price(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 3}, price=1100)
        r = await svc.hold(sid, ["F1", "F2"])
        assert r.status_code == 201 and r.json()["amountCents"] == 2200, r.text
        assert r.json()["tickets"] == [{"seat": f"F{n}", "category": "STANDARD", "ticketType": "ADULT",
                                        "priceCents": 1100} for n in (1, 2)]
        child = await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(h.new_id()),
                                      json={"seats": [{"code": "F3", "ticketType": "CHILD"}]})
        assert child.status_code == 422 and child.json()["seats"] == ["F3"], child.text


async def test_the_amount_comes_from_the_showtime_s_prices_and_is_read_back_by_checkout(start, db, h) -> None:
    async with start() as svc:
        sid = h.new_id()
        assert (await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"),
                                      json=full_form(sid))).status_code == 201
        owner = h.new_id()
        seats = [{"code": "A2", "ticketType": "CHILD"}, "K1", {"code": "A5", "ticketType": "SENIOR"},
                 {"code": "A6"}]
        r = await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(owner), json={"seats": seats})
        assert r.status_code == 201, r.text
        assert r.json()["amountCents"] == 800 + 1800 + 900 + 1200
        assert r.json()["tickets"] == [
            {"seat": "A2", "category": "ACCESSIBLE", "ticketType": "CHILD", "priceCents": 800},
            {"seat": "A5", "category": "STANDARD", "ticketType": "SENIOR", "priceCents": 900},
            {"seat": "A6", "category": "STANDARD", "ticketType": "ADULT", "priceCents": 1200},
            {"seat": "K1", "category": "VIP", "ticketType": "ADULT", "priceCents": 1800}]
        # payment-service reads the hold as a service (its HttpHoldDirectory) and charges amountCents
        read = await svc.client.get(f"/holds/{r.json()['holdId']}", headers=h.auth(0, "service"))
        assert (read.json()["amountCents"], read.json()["tickets"]) == (r.json()["amountCents"], r.json()["tickets"])
        assert await db.fetchval("SELECT amount_cents FROM booking WHERE hold_id = $1::uuid",
                                 r.json()["holdId"]) == 4700
        # a client cannot name the price
        priced = await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(owner),
                                       json={"seats": ["K2"], "amountCents": 1})
        assert priced.status_code == 422
        sneaky = await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(owner),
                                       json={"seats": [{"code": "K2", "priceCents": 1}]})
        assert sneaky.status_code == 422


async def test_a_ticket_type_without_a_price_is_422_and_frees_its_gate_keys(start, db, h) -> None:
    async with start() as svc:
        sid = h.new_id()
        assert (await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"),
                                      json=full_form(sid))).status_code == 201
        r = await svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(h.new_id()),
                                  json={"seats": ["A6", {"code": "K3", "ticketType": "STUDENT"}]})
        assert r.status_code == 422 and r.json()["seats"] == ["K3"], r.text
        assert {s["status"] for s in (await h.seat_rows(db, sid)).values()} == {"AVAILABLE"}
        again = await svc.hold(sid, ["A6", "K3"])  # the gate's keys went with the refusal
        assert again.status_code == 201 and again.json()["amountCents"] == 3000, again.text


async def test_holds_written_together_are_each_priced_for_their_own_tickets(start, h, statements) -> None:
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = h.new_id()
        assert (await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"),
                                      json=full_form(sid))).status_code == 201
        statements.clear()
        asked = [[{"code": f"A{n}", "ticketType": "CHILD" if n % 2 else "ADULT"}] for n in range(1, 9)]
        asked += [[f"K{n}"] for n in range(1, 11)] + [[{"code": "K1", "ticketType": "CHILD"}]]
        answers = await asyncio.gather(*(svc.client.post(f"/showtimes/{sid}/holds", headers=h.auth(h.new_id()),
                                                         json={"seats": seats}) for seats in asked))
    assert any(kind == "together" for kind, _ in statements), statements
    expected = [800 if n % 2 else 1200 for n in range(1, 9)] + [1800] * 10  # CHILD is 800 on A's both categories
    assert [a.json()["amountCents"] for a in answers[:18]] == expected, [a.text for a in answers]
    assert answers[18].status_code in (409, 422)  # K1 is taken (or VIP has no CHILD price): never a wrong price
