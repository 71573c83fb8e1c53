"""The HoldWriter port's contract, run against the fake (tests/fakes/) and the real writer on Postgres
(one statement per batch of holds of a showtime, as bootstrap.py wires it)."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from hold_service.domain.errors import InvalidSeats, SeatsUnavailable, TooManySeatsHeld
from hold_service.domain.model import Ticket

pytestmark = pytest.mark.integration


async def test_free_seats_are_taken_all_together(ports) -> None:
    sid = await ports.showtime(price_cents=1200)
    request, verdict = await ports.take(sid, ["A2", "A1"], ttl=600)
    hold = verdict.hold(request)
    assert (verdict.taken, verdict.earlier, hold.amount_cents, hold.seats) == ([], False, 2400, ["A1", "A2"])
    assert isinstance(verdict.expires_at, datetime)
    stored = await ports.get(request.hold_id)
    assert (stored.status, stored.seats, stored.expires_at) == ("HELD", ["A1", "A2"], verdict.expires_at)
    (held,) = await ports.events(request.booking_id)
    assert (held["type"], held["data"]["seats"], held["data"]["seatMapVersion"]) == ("SeatsHeld", ["A1", "A2"], 1)


async def test_a_hold_gets_all_of_its_seats_or_none(ports) -> None:
    sid = await ports.showtime()
    await ports.take(sid, ["A2"])
    request, verdict = await ports.take(sid, ["A1", "A2", "A3"])
    assert (verdict.taken, verdict.expires_at) == (["A2"], None)
    with pytest.raises(SeatsUnavailable) as refused:
        verdict.hold(request)
    assert refused.value.seats == ["A2"] and await ports.get(request.hold_id) is None
    _, free = await ports.take(sid, ["A1", "A3"])
    assert free.expires_at is not None  # nothing of the refused hold was written


async def test_unknown_showtimes_and_seats_write_nothing(ports) -> None:
    sid = await ports.showtime(seats=2)
    _, nowhere = await ports.take(sid + 1, ["A1"])
    assert nowhere.amount_cents is None and nowhere.expires_at is None
    request, verdict = await ports.take(sid, ["A1", "A9"])
    assert verdict.found == frozenset({"A1"}) and verdict.expires_at is None
    with pytest.raises(InvalidSeats):
        verdict.hold(request)
    assert (await ports.take(sid, ["A1"]))[1].expires_at is not None


async def test_a_hold_asked_again_under_its_id_is_answered_not_written_twice(ports) -> None:
    sid = await ports.showtime()
    request, _ = await ports.take(sid, ["A1"])
    again = await ports.writer.take(request)
    assert again.earlier and again.taken == []
    assert [e["type"] for e in await ports.events(request.booking_id)] == ["SeatsHeld"]


async def test_expired_seats_are_taken_and_their_release_recorded_first(ports) -> None:
    sid = await ports.showtime()
    old, _ = await ports.take(sid, ["A1", "A2"], ttl=0.3)
    await ports.elapse(0.6)
    new, verdict = await ports.take(sid, ["A2", "A3"])
    assert verdict.expires_at is not None
    (_, released) = await ports.events(old.booking_id)
    (held,) = await ports.events(new.booking_id)
    assert (released["type"], released["data"]["seats"], released["data"]["reason"]) == (
        "SeatsReleased", ["A2"], "EXPIRED")
    assert held["data"]["seatMapVersion"] == released["data"]["seatMapVersion"] + 1
    assert (await ports.get(old.hold_id)).status == "EXPIRED"


async def test_the_cap_counts_live_holds_and_refuses_without_writing(ports) -> None:
    sid = await ports.showtime()
    customer = ports.request(sid, ["A1"]).customer_id
    await ports.take(sid, ["A1"], customer=customer, cap=3, ttl=0.3)
    await ports.take(sid, ["A2", "A3"], customer=customer, cap=3)
    with pytest.raises(TooManySeatsHeld) as refused:
        await ports.take(sid, ["A4", "A5"], customer=customer, cap=3)
    assert refused.value.retry_after >= 1
    assert (await ports.take(sid, ["A4", "A5"]))[1].expires_at is not None  # another customer: nothing was kept
    await ports.elapse(0.6)  # the first hold expired: it counts no more
    assert (await ports.take(sid, ["A6"], customer=customer, cap=3))[1].expires_at is not None


async def test_concurrent_holds_each_get_their_own_verdict(ports) -> None:
    sid = await ports.showtime(seats=12)
    contested = [ports.request(sid, ["A1", "A2"]) for _ in range(6)]
    separate = [ports.request(sid, [f"A{n}"]) for n in range(3, 9)]
    verdicts = await asyncio.gather(*(ports.writer.take(r) for r in [*contested, *separate]))
    won = [v for v in verdicts[:6] if v.expires_at is not None]
    assert len(won) == 1 and all(v.taken for v in verdicts[:6] if v.expires_at is None)
    assert all(v.expires_at is not None for v in verdicts[6:])


async def test_the_cap_holds_for_one_customers_concurrent_holds(ports) -> None:
    sid = await ports.showtime(seats=6)
    customer = ports.request(sid, ["A1"]).customer_id
    requests = [ports.request(sid, seats, customer=customer, cap=4) for seats in (["A1", "A2"], ["A3", "A4"],
                                                                               ["A5", "A6"])]
    results = await asyncio.gather(*(ports.writer.take(r) for r in requests), return_exceptions=True)
    assert sum(not isinstance(r, Exception) and r.expires_at is not None for r in results) == 2
    assert [type(r) for r in results if isinstance(r, Exception)] == [TooManySeatsHeld]


async def test_each_ticket_is_priced_for_its_category_and_type_or_the_hold_is_refused(ports) -> None:
    sid = await ports.showtime(layout=[{"row": "A", "blocks": [{"from": 1, "to": 2, "category": "ACCESSIBLE"}]},
                                      {"row": "K", "blocks": [{"from": 1, "to": 2, "category": "VIP"}]}],
                              prices={"VIP": {"ADULT": 1800}, "ACCESSIBLE": {"ADULT": 1200, "CHILD": 800}})
    _, verdict = await ports.take(sid, ["A1", "K1"], types={"A1": "CHILD"})
    assert (verdict.amount_cents, verdict.tickets) == (2600, (Ticket("A1", "ACCESSIBLE", "CHILD", 800),
                                                              Ticket("K1", "VIP", "ADULT", 1800)))
    _, refused = await ports.take(sid, ["A2", "K2"], types={"K2": "SENIOR"})
    assert (refused.expires_at, refused.unpriced) == (None, ("K2",))
    together = await asyncio.gather(ports.take(sid, ["A2"], types={"A2": "CHILD"}), ports.take(sid, ["K2"]))
    assert [v.amount_cents for _, v in together] == [800, 1800]
