"""Best available (POST /showtimes/{id}/holds with `best`) and the no-lone-seat rule, on real Postgres and Redis:
the answers and errors, then hundreds of requests released together on one showtime."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROW = [{"from": 1, "to": 10}]


def hall(rows: str, blocks: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return [{"row": r, "blocks": blocks or ROW} for r in rows]


async def best(svc: Any, h: Any, sid: int, customer: int | None = None, **asked: Any) -> Any:
    return await svc.client.post(f"/showtimes/{sid}/holds", json={"best": {"count": 2, **asked}},
                                 headers=h.auth(customer or h.new_id()))


async def test_the_best_pair_is_in_the_middle_row_at_its_centre_with_the_picked_holds_answer(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(layout=hall("ABCDE"))
        r = await best(svc, h, sid, ticketTypes=["ADULT", "CHILD"])
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["seats"] == ["C5", "C6"] and body["amountCents"] == 1200 + 800
        assert {t["seat"]: t["ticketType"] for t in body["tickets"]} == {"C5": "ADULT", "C6": "CHILD"}
        seats = await h.seat_rows(db, sid)
        assert {str(seats[c]["hold_id"]) for c in ("C5", "C6")} == {body["holdId"]}
        # the gate knows them: a click on C5 is refused in Redis, before Postgres
        picked = await svc.hold(sid, ["C5"])
        assert picked.status_code == 409 and picked.json()["decidedBy"] == "gate"
        nxt = await best(svc, h, sid)
        assert nxt.json()["seats"] in (["C3", "C4"], ["C7", "C8"])


async def test_a_gap_splits_a_run_and_the_layout_may_rank_its_rows(start, h) -> None:
    async with start() as svc:
        blocks = [{"from": 1, "to": 3}, {"gap": 1}, {"from": 4, "to": 6}]
        sid = await svc.showtime_of(layout=[{"row": "A", "blocks": blocks, "rank": 2},
                                            {"row": "B", "blocks": [{"from": 1, "to": 6}], "rank": 1}])
        first = await best(svc, h, sid, count=3)  # B2-B4 is nearer B's centre, but leaves B1 alone
        assert first.json()["seats"] == ["B1", "B2", "B3"]
        assert (await best(svc, h, sid, count=3)).json()["seats"] == ["B4", "B5", "B6"]
        four = await best(svc, h, sid, count=4)  # A has 3 + gap + 3: never 4 side by side
        assert four.status_code == 409
        assert four.json()["error"] == "SEATS_UNAVAILABLE" and four.json()["together"] is False
        scattered = await best(svc, h, sid, count=4, together=False)
        assert scattered.status_code == 201 and len(scattered.json()["seats"]) == 4


async def test_the_category_is_chosen_from_and_bad_bodies_are_422(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(layout=[{"row": "A", "blocks": [{"from": 1, "to": 4, "category": "VIP"},
                                                                    {"from": 5, "to": 8}]}],
                                    prices={"STANDARD": {"ADULT": 1000}, "VIP": {"ADULT": 2000}})
        vip = await best(svc, h, sid, category="VIP")
        assert vip.status_code == 201 and {t["category"] for t in vip.json()["tickets"]} == {"VIP"}
        for body in ({"best": {"count": 0}}, {"best": {"count": 9}}, {"best": {"count": 2, "category": "GOLD"}},
                     {"best": {"count": 2, "ticketTypes": ["ADULT"]}}, {"best": {"count": 2, "extra": 1}},
                     {"best": {"count": 2}, "seats": ["A1"]}, {"best": "two"}, {}):
            r = await svc.client.post(f"/showtimes/{sid}/holds", json=body, headers=h.auth(h.new_id()))
            assert r.status_code == 422, (body, r.text)
            assert r.json()["error"] == "VALIDATION_ERROR"
        missing = await svc.client.post("/showtimes/999999999/holds", json={"best": {"count": 2}},
                                        headers=h.auth(h.new_id()))
        assert missing.status_code == 404


async def test_a_key_replays_the_chosen_hold(start, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of()
        who = h.new_id()
        asked = {"json": {"best": {"count": 3}}, "headers": {**h.auth(who), "Idempotency-Key": "k1"}}
        first = await svc.client.post(f"/showtimes/{sid}/holds", **asked)
        again = await svc.client.post(f"/showtimes/{sid}/holds", **asked)
        assert first.status_code == again.status_code == 201 and first.json() == again.json()
        other = await svc.client.post(f"/showtimes/{sid}/holds", json={"best": {"count": 2}},
                                      headers=asked["headers"])
        assert other.status_code == 422 and other.json()["error"] == "IDEMPOTENCY_KEY_REUSED"


async def test_lone_seat_rule_refuses_a_picked_hold_with_suggested_seats(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime_of(noLoneSeat=True)
        assert (await svc.hold(sid, ["F1", "F2"])).status_code == 201
        r = await svc.hold(sid, ["F4", "F5"])  # F3 alone between F2 and F4
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "LONE_SEAT" and r.json()["seats"] == ["F3"]
        suggested = r.json()["suggested"]
        assert len(suggested) == 2
        assert (await svc.hold(sid, suggested)).status_code == 201
        end = await svc.hold(sid, ["F9"])  # F10 alone at the row's end
        assert end.status_code == 409 and end.json()["seats"] == ["F10"]
        assert await db.fetchval("SELECT count(*) FROM booking WHERE showtime_id = $1", sid) == 2
        free = await svc.showtime_of()  # the rule is off by default
        assert (await svc.hold(free, ["F9"])).status_code == 201


async def run_crowd(svc: Any, h: Any, sid: int, n: int, counts: list[int]) -> list[Any]:
    asked = [svc.client.post(f"/showtimes/{sid}/holds", json={"best": {"count": counts[i % len(counts)]}},
                             headers=h.auth(h.new_id())) for i in range(n)]
    return await asyncio.gather(*asked)


def assert_runs(won: list[dict[str, Any]]) -> None:
    """Each hold is one run: one row, numbers side by side (the test hall has no gaps)."""
    for w in won:
        rows = {s.rstrip("0123456789") for s in w["seats"]}
        numbers = sorted(int(s[len(next(iter(rows))):]) for s in w["seats"])
        assert len(rows) == 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers))), w["seats"]


async def lone_seats(db: Any, sid: int) -> list[str]:
    """Free seats whose neighbours (same row, x +- 1) are all taken or missing, beside a taken one."""
    rows = await db.fetch("SELECT seat_code, row_name, x, status FROM show_seat WHERE showtime_id = $1", sid)
    place = {(r["row_name"], r["x"]): r["status"] for r in rows}
    lone = []
    for r in rows:
        beside = [place.get((r["row_name"], r["x"] + d)) for d in (-1, 1)]
        if r["status"] == "AVAILABLE" and all(b != "AVAILABLE" for b in beside) and "HELD" in beside:
            lone.append(r["seat_code"])
    return lone


@pytest.mark.parametrize("rule", [True, False])
async def test_hundreds_of_best_requests_at_once_get_whole_runs_or_409(start, db, h, rule: bool) -> None:
    """400 requests for 2 or 3 seats released together on a 10x12 hall (120 seats): every seat held at most
    once, every answer a whole run or a 409 with together false, the hall nearly full, and under the rule no
    lone seat left."""
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(layout=hall("ABCDEFGHIJ", [{"from": 1, "to": 12}]), noLoneSeat=rule)
        responses = await run_crowd(svc, h, sid, 400, [2, 3])
    codes = [r.status_code for r in responses]
    assert set(codes) <= {201, 409}, [r.text for r in responses if r.status_code not in (201, 409)][:3]
    assert all(r.json()["together"] is False for r in responses if r.status_code == 409)
    won = [r.json() for r in responses if r.status_code == 201]
    assert_runs(won)
    claimed = [s for w in won for s in w["seats"]]
    assert len(claimed) == len(set(claimed))
    await h.assert_single_holders(db, sid)
    seats = await h.seat_rows(db, sid)
    for w in won:
        assert {str(seats[s]["hold_id"]) for s in w["seats"]} == {w["holdId"]}
    assert sum(1 for s in seats.values() if s["status"] == "HELD") == len(claimed)
    assert len(claimed) >= 100, len(claimed)  # the runs spread: few seats are left unsold
    if rule:
        assert await lone_seats(db, sid) == []


async def test_best_and_picked_together_never_share_a_seat(start, db, h) -> None:
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(layout=hall("ABCD"))
        picks = [svc.hold(sid, [f"{r}{n}", f"{r}{n + 1}"]) for r in "ABCD" for n in range(1, 10, 2)]
        responses = await asyncio.gather(*picks, *(best(svc, h, sid) for _ in range(40)))
    assert {r.status_code for r in responses} <= {201, 409}
    won = [r.json() for r in responses if r.status_code == 201]
    claimed = [s for w in won for s in w["seats"]]
    assert len(claimed) == len(set(claimed)) and len(claimed) >= 30
    await h.assert_single_holders(db, sid)


async def test_the_hand_parser_refuses_what_the_body_model_refuses(start, h) -> None:
    """The hot route reads the body by hand; HoldCreate describes it (/docs): both refuse the same shapes."""
    from hold_service.entrypoints.api.schemas import HoldCreate
    from pydantic import ValidationError

    bodies: list[Any] = [{"seats": ["F1"]}, {"best": {"count": 2}}, {"best": {"count": 2, "category": "VIP"}},
                         {"best": {"count": 2, "together": False, "ticketTypes": ["ADULT", "CHILD"]}},
                         {}, {"seats": ["F1"], "best": {"count": 1}}, {"best": {"count": "x"}}, {"best": None},
                         {"best": {"count": 2, "pick": 1}}, {"best": {"count": 2, "ticketTypes": ["KID", "ADULT"]}},
                         {"seats": "F1"}, {"other": 1}, [1]]
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(prices={"STANDARD": {"ADULT": 1200, "CHILD": 800}, "VIP": {"ADULT": 2000}},
                                    layout=[{"row": "F", "blocks": [{"from": 1, "to": 6},
                                                                    {"from": 7, "to": 10, "category": "VIP"}]}])
        for body in bodies:
            try:
                HoldCreate.model_validate(body)
                model_ok = True
            except ValidationError:
                model_ok = False
            r = await svc.client.post(f"/showtimes/{sid}/holds", json=body, headers=h.auth(h.new_id()))
            assert (r.status_code != 422) == model_ok, (body, r.text)


async def test_seat_runs_says_a_run_strands_exactly_when_lone_seats_does(start, db, h) -> None:
    """seat_runs asks lone_seats' question by window functions (one pass, not one query per run): the two
    agree on every run of a hall with gaps, two categories and random taken seats."""
    import random

    rng = random.Random(3)
    blocks = [{"from": 1, "to": 5}, {"gap": 1}, {"from": 6, "to": 9, "category": "VIP"}, {"from": 10, "to": 16},
              {"gap": 2}, {"from": 17, "to": 19}]
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(layout=hall("ABCDEF", blocks),
                                    prices={"STANDARD": {"ADULT": 1000}, "VIP": {"ADULT": 2000}})
        codes = [f"{r}{n}" for r in "ABCDEF" for n in range(1, 20)]
        for seat in rng.sample(codes, 40):
            await svc.hold(sid, [seat])
    checked = 0
    for count in (1, 2, 3):
        rows = await db.fetch("SELECT codes, strands, cardinality(lone_seats($1, codes)) > 0 AS lone "
                              "FROM seat_runs($1, $2, 'STANDARD', 10000)", sid, count)
        assert all(r["strands"] == r["lone"] for r in rows), [r for r in rows if r["strands"] != r["lone"]][:3]
        checked += sum(r["strands"] for r in rows)
    assert checked > 0  # some runs do strand a seat: the comparison saw both answers


async def test_under_the_rule_picked_holds_arriving_together_are_decided_one_by_one(start, db, h) -> None:
    """A batch of picked holds (sql take_seats) on a showtime under the rule writes none of them itself: each
    is asked again alone (the same statement, which checks the rule for a hold alone), so pairs side by side are
    all granted."""
    async with start(hold_rate_limit_per_minute=1000) as svc:
        sid = await svc.showtime_of(layout=hall("AB"), noLoneSeat=True)
        pairs = [[f"{r}{n}", f"{r}{n + 1}"] for r in "AB" for n in range(1, 10, 2)]
        responses = await asyncio.gather(*(svc.hold(sid, p) for p in pairs))
    assert [r.status_code for r in responses] == [201] * 10, [r.text for r in responses if r.status_code != 201]
    await h.assert_single_holders(db, sid)
    assert await lone_seats(db, sid) == []
