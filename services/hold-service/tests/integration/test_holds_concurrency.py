"""R1: concurrent holds on the same seats, overlapping holds, random overlapping storms."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import datetime

import pytest
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("gate", [True, False])
async def test_r1_one_winner_per_trial_20_and_200(start, db, h, gate: bool) -> None:
    trials = 0
    async with start(seat_gate_enabled=gate, hold_rate_limit_per_minute=1000) as svc:
        for n in (20, 200):
            for _ in range(25):
                sid = await svc.showtime({"F": 4})
                responses = await asyncio.gather(*(svc.hold(sid, ["F2", "F1"]) for _ in range(n)))
                codes = sorted(r.status_code for r in responses)
                assert codes == [201] + [409] * (n - 1), codes
                winner = next(r.json() for r in responses if r.status_code == 201)
                seats = await h.seat_rows(db, sid)
                assert {str(seats[c]["hold_id"]) for c in ("F1", "F2")} == {winner["holdId"]}
                assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id=$1", sid) == 1
                trials += 1
    assert trials == 50


async def test_a_holds_f5_f6_then_b_asks_f6_f7(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        a = await svc.hold(sid, ["F5", "F6"])
        assert a.status_code == 201
        b = await svc.hold(sid, ["F6", "F7"])
        assert b.status_code == 409
        assert b.json()["error"] == "SEATS_UNAVAILABLE" and b.json()["seats"] == ["F6"]
        seats = await h.seat_rows(db, sid)
        assert seats["F7"]["status"] == "AVAILABLE" and seats["F7"]["hold_id"] is None
        assert str(seats["F6"]["hold_id"]) == a.json()["holdId"]


@pytest.mark.parametrize("gate", [True, False])
async def test_500_random_overlapping_holds_no_deadlock_no_double_holder(start, db, h, gate: bool) -> None:
    rng = random.Random(7)
    codes = [f"{r}{n}" for r in "AB" for n in range(1, 11)]
    async with start(seat_gate_enabled=gate, hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime({"A": 10, "B": 10})
        requests = [rng.sample(codes, rng.randint(1, 8)) for _ in range(500)]
        responses = await asyncio.gather(*(svc.hold(sid, seats) for seats in requests))
    statuses = {r.status_code for r in responses}
    assert statuses <= {201, 409}, [r.text for r in responses if r.status_code not in (201, 409)][:3]
    await h.assert_single_holders(db, sid)
    won = [r.json() for r in responses if r.status_code == 201]
    claimed = [s for w in won for s in w["seats"]]
    assert len(claimed) == len(set(claimed))  # no seat granted twice
    seats = await h.seat_rows(db, sid)
    for w in won:
        assert {str(seats[s]["hold_id"]) for s in w["seats"]} == {w["holdId"]}
    assert sum(1 for s in seats.values() if s["status"] == "HELD") == len(claimed)


@pytest.mark.parametrize("gate", [True, False])
async def test_seat_map_versions_are_one_per_change_in_commit_order(start, db, h, gate: bool) -> None:
    """Versions are one per change, in the order of the changes (append_seat_map_events and
    number_seat_map_changes, sql/schema.sql): 40 concurrent holds on one showtime, then a cancel, give SeatsHeld
    events carrying versions 1..40 exactly once, SeatsReleased 41, and the showtime, its seat map and the outbox
    agree. The holds are
    written in batches (several in one statement), the gate on or off."""
    async with start(seat_gate_enabled=gate, hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime({"A": 20, "B": 20})
        seats = [[f"{r}{n}"] for r in "AB" for n in range(1, 21)]
        owner = h.new_id()
        responses = await asyncio.gather(*(svc.hold(sid, s, customer=owner if i == 0 else None)
                                           for i, s in enumerate(seats)))
        assert [r.status_code for r in responses] == [201] * 40
        first = responses[0].json()
        cancel = await svc.client.delete(f"/holds/{first['holdId']}", headers=h.auth(owner))
        assert cancel.status_code == 204

        async def caught_up() -> dict | None:  # the versions come a moment after each COMMIT
            body = (await svc.client.get(f"/showtimes/{sid}/seats", headers=h.auth(owner))).json()
            return body if body["version"] == 41 else None
        seat_map = await eventually(caught_up, timeout=5, interval=0.02)
    await numbered(db)
    payloads = await db.fetch("SELECT payload FROM outbox ORDER BY id DESC LIMIT 500")
    events = [e for e in (json.loads(p["payload"]) for p in payloads) if e["showtimeId"] == sid]
    held = sorted(e["data"]["seatMapVersion"] for e in events if e["type"] == "SeatsHeld")
    released = [e["data"]["seatMapVersion"] for e in events if e["type"] == "SeatsReleased"]
    assert held == list(range(1, 41))
    assert released == [41]
    # expiresAt and amountCents are written into the event by Postgres: the same as the 201 said.
    answered = {r.json()["holdId"]: r.json() for r in responses}
    for e in (e for e in events if e["type"] == "SeatsHeld"):
        sent = answered[e["data"]["holdId"]]
        assert datetime.fromisoformat(e["data"]["expiresAt"]) == datetime.fromisoformat(sent["expiresAt"])
        assert e["data"]["amountCents"] == sent["amountCents"]
    assert await db.fetchval("SELECT seat_map_version FROM showtime WHERE showtime_id = $1", sid) == 41
    assert seat_map["version"] == 41
