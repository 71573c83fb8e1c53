"""HTTP behaviour: validation, 404s, BOLA (S2), rate limits (S4), idempotency, cancel, seat map."""

from __future__ import annotations

import asyncio
import json
import random
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families
from ticketing_testing import eventually, transactions_opened
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("seats", [[], [f"F{i}" for i in range(1, 10)], ["F1", "F1"], ["Z99"], ["f1"]])
async def test_invalid_seat_requests_are_422_and_hold_nothing(start, db, h, seats) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        r = await svc.hold(sid, seats)
        assert r.status_code == 422 and r.json()["error"] == "VALIDATION_ERROR", r.text
    assert await db.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id=$1 AND status<>'AVAILABLE'",
                             sid) == 0


async def test_unknown_showtime_is_404(start, h) -> None:
    async with start() as svc:
        assert (await svc.hold(h.new_id(), ["F1"])).status_code == 404
        r = await svc.client.get(f"/showtimes/{h.new_id()}/seats", headers=h.auth(3))
        assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"


async def test_s2_other_customer_gets_404_and_nothing_changes(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        owner, other = h.new_id(), h.new_id()
        hold = (await svc.hold(sid, ["F1"], owner)).json()
        for method in ("GET", "DELETE"):
            r = await svc.client.request(method, f"/holds/{hold['holdId']}", headers=h.auth(other))
            assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"
        missing = await svc.client.get(f"/holds/{uuid.uuid4()}", headers=h.auth(other))
        assert missing.status_code == 404 and missing.json() == r.json()  # no existence oracle
        assert (await h.seat_rows(db, sid))["F1"]["status"] == "HELD"
        mine = await svc.client.get(f"/holds/{hold['holdId']}", headers=h.auth(owner))
        assert mine.json()["status"] == "HELD" and mine.json()["customerId"] == owner
        service = await svc.client.get(f"/holds/{hold['holdId']}", headers=h.auth(0, "service"))
        assert service.status_code == 200


async def test_cancel_frees_seats_at_once_and_emits_released(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        owner = h.new_id()
        hold = (await svc.hold(sid, ["F1", "F2"], owner)).json()
        r = await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(owner))
        assert r.status_code == 204
        assert {s["status"] for s in (await h.seat_rows(db, sid)).values()} == {"AVAILABLE"}
        again = await svc.hold(sid, ["F2", "F1"])
        assert again.status_code == 201  # the gate's keys went too
        got = await svc.client.get(f"/holds/{hold['holdId']}", headers=h.auth(owner))
        assert got.json()["status"] == "RELEASED"
    await numbered(db)
    types = await db.fetch("SELECT convert_from(payload, 'UTF8')::jsonb AS e FROM outbox "
                           "WHERE message_key = $1 ORDER BY id", hold["bookingId"])
    events = [json.loads(t["e"]) for t in types]
    assert [(e["type"], e["data"].get("reason")) for e in events] == [
        ("SeatsHeld", None), ("SeatsReleased", "CANCELLED")]


async def test_s4_rate_limit_429_with_retry_after_and_others_unaffected(start, db, h) -> None:
    async with start(hold_rate_limit_per_minute=5, max_seats_held_per_customer_showtime=100) as svc:
        sid = await svc.showtime({"F": 20})
        bot = h.new_id()
        codes = [(await svc.hold(sid, [f"F{i}"], bot)).status_code for i in range(1, 8)]
        assert codes == [201] * 5 + [429, 429]
        r = await svc.hold(sid, ["F10"], bot)
        assert r.json()["error"] == "RATE_LIMITED" and int(r.headers["Retry-After"]) >= 1
        assert (await svc.hold(sid, ["F11"])).status_code == 201  # another customer
    assert await db.fetchval("SELECT count(*) FROM booking WHERE customer_id=$1", bot) == 5


async def test_refusals_are_counted_by_the_limit_that_made_them(start, h) -> None:
    def refused(metrics: str) -> dict[str, float]:
        return {s.labels["limit"]: s.value for family in text_string_to_metric_families(metrics)
                for s in family.samples if s.name == "ticketing_hold_rate_limited_total"}

    async with start(hold_rate_limit_per_minute=2, hold_rate_limit_per_ip_per_minute=4,
                     max_seats_held_per_customer_showtime=100) as svc:
        sid = await svc.showtime({"F": 20})
        before = refused((await svc.client.get("/metrics")).text)
        assert set(before) == {"customer", "address", "anonymous"}  # exported before the first refusal
        office = svc.client_from(f"100.{random.randint(64, 127)}.{random.randint(0, 255)}.9")  # this test's own
        eager = h.new_id()

        async def hold(seat: int, customer: int | None = None) -> int:
            r = await office.post(f"/showtimes/{sid}/holds", json={"seats": [f"F{seat}"]},
                                  headers=h.auth(customer or h.new_id()))
            return r.status_code

        # One customer past his 2 a minute (his third request still counts for the address), then two
        # colleagues: the second is past the address's 4, and refused again from memory.
        assert [await hold(1, eager), await hold(2, eager), await hold(3, eager)] == [201, 201, 429]
        assert [await hold(4), await hold(5), await hold(6)] == [201, 429, 429]
        after = refused((await svc.client.get("/metrics")).text)
        await office.aclose()
    assert (after["customer"] - before["customer"], after["address"] - before["address"]) == (1, 2)
    assert after["anonymous"] == before["anonymous"]  # holds never count against the joins without a token


async def test_denial_of_inventory_cap_per_customer_and_showtime(start, db, h) -> None:
    async with start(hold_rate_limit_per_minute=100, max_seats_held_per_customer_showtime=8) as svc:
        sid = await svc.showtime({"F": 20})
        hoarder = h.new_id()
        results = await asyncio.gather(*(svc.hold(sid, [f"F{2 * i + 1}", f"F{2 * i + 2}"], hoarder)
                                         for i in range(8)))
        assert sorted(r.status_code for r in results) == [201] * 4 + [429] * 4
    held = await db.fetchval("SELECT count(*) FROM show_seat WHERE showtime_id=$1 AND customer_id=$2",
                             sid, hoarder)
    assert held == 8


async def test_idempotency_key_replays_first_result_and_rejects_other_body(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        who = h.new_id()
        first, second = await asyncio.gather(svc.hold(sid, ["F1"], who, **{"Idempotency-Key": "k1"}),
                                             svc.hold(sid, ["F1"], who, **{"Idempotency-Key": "k1"}))
        assert first.status_code == second.status_code == 201 and first.json() == second.json()
        other = await svc.hold(sid, ["F2"], who, **{"Idempotency-Key": "k1"})
        assert other.status_code == 422 and other.json()["error"] == "IDEMPOTENCY_KEY_REUSED"
        lost = await svc.hold(sid, ["F1"], h.new_id(), **{"Idempotency-Key": "k2"})
        assert lost.status_code == 409
    assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id=$1", sid) == 1


async def test_a_keyed_hold_opens_no_transaction(start, h, monkeypatch) -> None:
    """Its statements (the key's claim, the hold, the outcome's store) each commit alone: no BEGIN and COMMIT
    round trips around a single statement. Its replay is one read, with none either, and so is reading it."""
    opened = transactions_opened(monkeypatch)
    async with start() as svc:
        sid = await svc.showtime()
        who = h.new_id()
        assert (await svc.hold(sid, ["F5"])).status_code == 201  # the showtime's gate is filled from Postgres
        await asyncio.sleep(0.5)  # (in the background)
        opened.clear()
        first = await svc.hold(sid, ["F1"], who, **{"Idempotency-Key": "once"})
        assert first.status_code == 201 and opened == []
        again = await svc.hold(sid, ["F1"], who, **{"Idempotency-Key": "once"})
        assert again.status_code == 201 and again.json() == first.json() and opened == []
        refused = await svc.hold(sid, ["F1"], h.new_id(), **{"Idempotency-Key": "late"})
        assert refused.status_code == 409 and opened == []
        read = await svc.client.get(f"/holds/{first.json()['holdId']}", headers=h.auth(who))
        assert read.status_code == 200 and opened == []  # a read is one statement too


async def test_seat_map_has_version_and_follows_changes(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime({"F": 3})
        url, auth = f"/showtimes/{sid}/seats", h.auth(5)
        before = (await svc.client.get(url, headers=auth)).json()
        assert before["version"] == 0 and {s["status"] for s in before["seats"]} == {"AVAILABLE"}
        assert (await svc.hold(sid, ["F2"])).status_code == 201

        async def moved() -> dict:  # the change reaches the process' map as Postgres notifies it
            after = (await svc.client.get(url, headers=auth)).json()
            return after if after["version"] == 1 else {}
        after = await eventually(moved, timeout=5, interval=0.02)
        assert {s["code"]: s["status"] for s in after["seats"]}["F2"] == "HELD"


async def test_seat_map_lists_seats_in_hall_order(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime({"B": 2, "A": 11, "AA": 1})
        seats = (await svc.client.get(f"/showtimes/{sid}/seats", headers=h.auth(5))).json()["seats"]
        assert [s["code"] for s in seats] == [*(f"A{n}" for n in range(1, 12)), "B1", "B2", "AA1"]


async def test_a_showtime_starting_outside_the_calendar_in_utc_is_refused(start, h) -> None:
    """An offset can put a time before year 1 in UTC: a 422, never a 500 from the database."""
    async with start() as svc:
        r = await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"), json={
            "showtimeId": h.new_id(), "title": "Early", "startsAt": "0001-01-01T00:00:06+03:00", "priceCents": 100,
            "rows": {"A": 1}})
        assert (r.status_code, r.json()["error"]) == (422, "VALIDATION_ERROR"), r.text
