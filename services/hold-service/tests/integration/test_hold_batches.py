"""Holds the gate lets through together are decided and written by one statement
(adapters/writer.py, sql take_seats), and each still gets its own verdict."""

from __future__ import annotations

import asyncio
import json

import pytest
from hold_service.adapters.seat_gate import mark_key, seat_key
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


async def test_holds_admitted_together_are_written_by_one_statement(start, db, h, statements) -> None:
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime({"A": 20, "B": 20})
        statements.clear()
        responses = await asyncio.gather(*(svc.hold(sid, [f"{r}{n}"]) for r in "AB" for n in range(1, 21)))
        assert [r.status_code for r in responses] == [201] * 40
    assert {kind for kind, _ in statements} == {"together"}, statements  # none written on its own
    assert sum(n for _, n in statements) == 40 and len(statements) < 40
    await h.assert_single_holders(db, sid)
    seats = await h.seat_rows(db, sid)
    for r in responses:
        hold = r.json()
        assert str(seats[hold["seats"][0]]["hold_id"]) == hold["holdId"]


async def test_each_hold_of_a_batch_gets_its_own_verdict(start, db, h, statements) -> None:
    """In one batch: free seats (201), a seat Postgres knows is held but the gate forgot (409, as after
    a Redis flush), an unknown seat (422) and a customer over the cap (429). The batch writes the
    first and refuses the next two itself; the last is asked again on its own (the cap is
    checked at COMMIT). The three refused write nothing and free their gate keys."""
    async with start(hold_rate_limit_per_minute=1000, max_seats_held_per_customer_showtime=8) as svc:
        sid = await svc.showtime({"F": 20})
        assert (await svc.hold(sid, ["F1"])).status_code == 201
        # The first hold of a showtime refills its gate in the background (no mark yet): once the mark is there,
        # the refill has written its keys and will not put F1's back.
        assert await eventually(lambda: svc.redis.exists(mark_key(sid)), timeout=10, interval=0.02)
        await svc.redis.delete(seat_key(sid, "F1"))
        hoarder = h.new_id()
        assert (await svc.hold(sid, [f"F{n}" for n in range(10, 17)], hoarder)).status_code == 201
        statements.clear()
        free, taken, unknown, capped = await asyncio.gather(
            svc.hold(sid, ["F2", "F3"]), svc.hold(sid, ["F1", "F4"]), svc.hold(sid, ["F5", "F30"]),
            svc.hold(sid, ["F6", "F7"], hoarder))
        assert free.status_code == 201, free.text
        assert taken.status_code == 409 and taken.json()["seats"] == ["F1"], taken.text
        assert taken.json()["decidedBy"] == "postgres"
        assert unknown.status_code == 422 and unknown.json()["error"] == "VALIDATION_ERROR", unknown.text
        assert capped.status_code == 429 and "hold 7 seats" in capped.json()["message"], capped.text
        assert statements == [("together", 4), ("alone", 1)]
        assert not await svc.redis.exists(*(seat_key(sid, s) for s in ("F4", "F5", "F6", "F7")))
    seats = await h.seat_rows(db, sid)
    assert [s for s in ("F2", "F3", "F4", "F5", "F6", "F7") if seats[s]["status"] != "AVAILABLE"] == ["F2", "F3"]
    assert str(seats["F2"]["hold_id"]) == free.json()["holdId"]
    await h.assert_single_holders(db, sid)


async def test_a_batch_writes_only_the_first_hold_of_a_seat_and_of_a_customer(start, db, h, statements) -> None:
    """Should two holds of one seat, or two of one customer, reach one batch (the gate is off, or lost its
    keys), the batch writes only the first of each; the others are decided alone, one after the other."""
    async with start(hold_rate_limit_per_minute=1000, max_seats_held_per_customer_showtime=3,
                     seat_gate_enabled=False) as svc:
        sid = await svc.showtime({"F": 10})
        x, y, z = h.new_id(), h.new_id(), h.new_id()
        statements.clear()
        a, b, c, d = await asyncio.gather(svc.hold(sid, ["F1", "F2"], x), svc.hold(sid, ["F2", "F3"], y),
                                          svc.hold(sid, ["F5"], x), svc.hold(sid, ["F7"], z))
        assert statements == [("together", 4)] + [("alone", 1)] * 2
        assert [r.status_code for r in (a, b, c, d)] == [201, 409, 201, 201], [r.text for r in (a, b, c, d)]
        assert b.json()["seats"] == ["F2"]
    seats = await h.seat_rows(db, sid)
    assert {s: str(seats[s]["hold_id"]) for s in ("F1", "F2", "F5", "F7")} == {
        "F1": a.json()["holdId"], "F2": a.json()["holdId"], "F5": c.json()["holdId"], "F7": d.json()["holdId"]}
    assert seats["F3"]["status"] == "AVAILABLE"
    await h.assert_single_holders(db, sid)


async def test_a_wave_of_expired_holds_is_decided_alike_by_the_plan_postgres_caches(start, db, h,
                                                                                    statements) -> None:
    """hold-service runs every statement with the plan Postgres makes once for any parameters (the generic
    plan: bootstrap.PLANS), so that plan decides the holds. A wave of holds taking the seats of expired
    holds is written by one batch, each with the expired hold's SeatsReleased{EXPIRED} and its own
    SeatsHeld, versions gapless. (Two joins in that plan were nested loops, seats x holds and seats x seats,
    many times slower than the custom plan; make bench-wave.)"""
    pairs = [[f"{r}{n}", f"{r}{n + 1}"] for r in "AB" for n in (1, 3, 5, 7, 9)]
    async with start(hold_rate_limit_per_minute=1000, hold_ttl_seconds=1) as svc:
        async with svc.service.pool.acquire() as conn:
            assert await conn.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
        sid = await svc.showtime({"A": 10, "B": 10})
        first = await asyncio.gather(*(svc.hold(sid, seats) for seats in pairs))
        assert [r.status_code for r in first] == [201] * 10
        await asyncio.sleep(1.2)  # every hold past its time (still HELD in its rows: lazy expiry)
        statements.clear()
        second = await asyncio.gather(*(svc.hold(sid, seats) for seats in reversed(pairs)))
        assert [r.status_code for r in second] == [201] * 10, [r.text for r in second]
    assert any(kind == "together" and n > 1 for kind, n in statements), statements
    seats = await h.seat_rows(db, sid)
    for r in second:
        assert {str(seats[s]["hold_id"]) for s in r.json()["seats"]} == {r.json()["holdId"]}
    await numbered(db)
    payloads = await db.fetch("SELECT payload FROM outbox ORDER BY id DESC LIMIT 200")
    events = sorted((e for e in (json.loads(p["payload"]) for p in payloads) if e["showtimeId"] == sid),
                    key=lambda e: e["data"]["seatMapVersion"])
    assert [e["data"]["seatMapVersion"] for e in events] == list(range(1, 31))
    expired = {r.json()["holdId"]: sorted(r.json()["seats"]) for r in first}
    released = [e for e in events if e["type"] == "SeatsReleased"]
    assert {e["data"]["holdId"]: sorted(e["data"]["seats"]) for e in released} == expired
    assert {e["data"]["reason"] for e in released} == {"EXPIRED"}
    held = [e["data"]["holdId"] for e in events[10:] if e["type"] == "SeatsHeld"]
    assert sorted(held) == sorted(r.json()["holdId"] for r in second)
    await h.assert_single_holders(db, sid)
