"""hold_seats, get_hold and cancel_hold on the fakes: what each decides and what it leaves behind."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hold_service.domain.commands import CancelHold
from hold_service.domain.errors import (
    HoldNotActive,
    HoldNotFound,
    InvalidSeats,
    RateLimited,
    SeatsUnavailable,
    ShowtimeNotFound,
    TooManySeatsHeld,
)
from hold_service.domain.model import HoldSeats
from hold_service.service_layer.holds import cancel_hold, get_hold, hold_seats


def ask(showtime_id: int, customer_id: int, *seats: str) -> HoldSeats:
    return HoldSeats(showtime_id=showtime_id, customer_id=customer_id, seats=list(seats))


async def test_a_hold_takes_its_seats_and_records_seats_held(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600)
    sid = await world.showtime({"F": 4}, price_cents=1200)
    assert (await world.seat_map(sid))["version"] == 0
    hold = await hold_seats(ask(sid, 7, "F2", "F1"), world.deps)
    assert (hold.status, hold.seats, hold.amount_cents) == ("HELD", ["F1", "F2"], 2400)
    assert hold.expires_at == world.clock.now() + timedelta(seconds=600)
    fresh = await world.seat_map(sid)
    assert fresh["version"] == 1
    assert [s["status"] for s in fresh["seats"]] == ["HELD", "HELD", "AVAILABLE", "AVAILABLE"]
    (held,) = world.events()
    assert (held.type, held.data.holdId, held.data.seatMapVersion) == ("SeatsHeld", hold.hold_id, 1)


async def test_rate_limited_customer_gets_retry_after_and_nothing_is_held(fakes) -> None:
    world = fakes.fake_deps(hold_rate_limit_per_minute=2)
    sid = await world.showtime()
    for seat in ("F1", "F2"):
        await hold_seats(ask(sid, 7, seat), world.deps)
    world.clock.advance(20)
    with pytest.raises(RateLimited) as refused:
        await hold_seats(ask(sid, 7, "F3"), world.deps)
    assert refused.value.retry_after == 40  # the first of the two leaves the window 60 s after it came
    assert world.seats(sid)["F3"] == "AVAILABLE"
    await hold_seats(ask(sid, 8, "F3"), world.deps)  # per customer
    world.clock.advance(41)
    assert (await hold_seats(ask(sid, 7, "F4"), world.deps)).status == "HELD"


async def test_the_gate_refuses_seats_a_live_hold_has(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    await hold_seats(ask(sid, 7, "F1", "F2"), world.deps)
    with pytest.raises(SeatsUnavailable) as refused:
        await hold_seats(ask(sid, 8, "F2", "F3"), world.deps)
    assert (refused.value.seats, refused.value.decided_by) == (["F2"], "gate")
    assert world.seats(sid)["F3"] == "AVAILABLE"
    await hold_seats(ask(sid, 9, "F3"), world.deps)  # the refused request took no gate key either


async def test_postgres_refusal_frees_the_gate_keys_of_the_refused_hold(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    await hold_seats(ask(sid, 7, "F1"), world.deps)
    world.admission.forget()  # Redis lost its keys: the gate lets everything through, Postgres decides
    with pytest.raises(SeatsUnavailable) as refused:
        await hold_seats(ask(sid, 8, "F1", "F2"), world.deps)
    assert (refused.value.seats, refused.value.decided_by) == (["F1"], "postgres")
    assert (await hold_seats(ask(sid, 9, "F2"), world.deps)).status == "HELD"  # F2's key went with the refusal


async def test_the_cap_refuses_more_seats_than_a_customer_may_hold_and_frees_the_gate(fakes) -> None:
    world = fakes.fake_deps(max_seats_held_per_customer_showtime=3, hold_ttl_seconds=600)
    sid = await world.showtime()
    await hold_seats(ask(sid, 7, "F1", "F2"), world.deps)
    world.clock.advance(100)
    with pytest.raises(TooManySeatsHeld) as refused:
        await hold_seats(ask(sid, 7, "F3", "F4"), world.deps)
    assert refused.value.retry_after == 500  # when the earlier hold frees its seats
    assert "you already hold 2 seats" in str(refused.value)
    assert [h.seats for h in world.holds()] == [["F1", "F2"]]
    assert (await hold_seats(ask(sid, 8, "F3", "F4"), world.deps)).status == "HELD"  # no gate key left behind
    assert (await hold_seats(ask(sid, 7, "F5"), world.deps)).status == "HELD"  # up to the cap
    with pytest.raises(TooManySeatsHeld):
        await hold_seats(ask(sid, 7, "F6"), world.deps)
    world.clock.advance(501)  # the first hold expired: its seats no longer count
    assert (await hold_seats(ask(sid, 7, "F6", "F7"), world.deps)).status == "HELD"


async def test_requests_the_showtime_cannot_serve(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime({"F": 2})
    with pytest.raises(ShowtimeNotFound):
        await hold_seats(ask(sid + 1, 7, "F1"), world.deps)
    with pytest.raises(InvalidSeats) as unknown:
        await hold_seats(ask(sid, 7, "F1", "F3"), world.deps)
    assert unknown.value.seats == ["F3"]
    with pytest.raises(InvalidSeats):
        await hold_seats(ask(sid, 7, "F1", "F1"), world.deps)
    assert world.holds() == [] and world.seats(sid) == {"F1": "AVAILABLE", "F2": "AVAILABLE"}
    assert (await hold_seats(ask(sid, 8, "F1"), world.deps)).status == "HELD"  # the refusals kept no gate key


async def test_lazy_expiry_lets_another_customer_take_expired_seats_before_any_sweep(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60)
    sid = await world.showtime()
    first = await hold_seats(ask(sid, 7, "F1", "F2"), world.deps)
    world.clock.advance(61)
    second = await hold_seats(ask(sid, 8, "F2", "F3"), world.deps)
    assert (await get_hold(first.hold_id, None, world.deps)).status == "EXPIRED"
    assert world.seats(sid)["F1"] == "AVAILABLE" and world.seats(sid)["F2"] == "HELD"
    released, held = world.events()[1:]
    assert (released.type, released.data.holdId, released.data.seats, released.data.reason) == (
        "SeatsReleased", first.hold_id, ["F2"], "EXPIRED")
    assert (held.type, held.data.holdId, held.data.seatMapVersion) == ("SeatsHeld", second.hold_id, 3)


async def test_get_hold_shows_a_hold_to_its_owner_and_services_only(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    hold = await hold_seats(ask(sid, 7, "F1"), world.deps)
    assert (await get_hold(hold.hold_id, 7, world.deps)).hold_id == hold.hold_id
    assert (await get_hold(hold.hold_id, None, world.deps)).hold_id == hold.hold_id
    with pytest.raises(HoldNotFound):
        await get_hold(hold.hold_id, 8, world.deps)


async def test_cancel_frees_the_seats_at_once_and_is_idempotent(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    hold = await hold_seats(ask(sid, 7, "F1", "F2"), world.deps)
    await cancel_hold(CancelHold(hold.hold_id, 7), world.deps)
    await cancel_hold(CancelHold(hold.hold_id, 7), world.deps)
    assert (await get_hold(hold.hold_id, 7, world.deps)).status == "RELEASED"
    assert {s["status"] for s in (await world.seat_map(sid))["seats"]} == {"AVAILABLE"}
    assert [(e.type, e.data.reason) for e in world.events("SeatsReleased")] == [("SeatsReleased", "CANCELLED")]
    assert (await hold_seats(ask(sid, 8, "F1", "F2"), world.deps)).status == "HELD"  # the gate let go too


async def test_only_the_owner_cancels(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    hold = await hold_seats(ask(sid, 7, "F1"), world.deps)
    with pytest.raises(HoldNotFound):
        await cancel_hold(CancelHold(hold.hold_id, 8), world.deps)
    with pytest.raises(HoldNotFound):
        await cancel_hold(CancelHold(uuid.uuid4(), 7), world.deps)
    assert (await get_hold(hold.hold_id, 7, world.deps)).status == "HELD"


async def test_cancelling_an_expired_hold_ends_it_as_expired(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60)
    sid = await world.showtime()
    hold = await hold_seats(ask(sid, 7, "F1"), world.deps)
    world.clock.advance(61)
    await cancel_hold(CancelHold(hold.hold_id, 7), world.deps)
    assert [h.status for h in world.holds()] == ["EXPIRED"]
    assert [e.data.reason for e in world.events("SeatsReleased")] == ["EXPIRED"]


async def test_a_booked_hold_cannot_be_cancelled(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    hold = await hold_seats(ask(sid, 7, "F1"), world.deps)
    async with world.deps.uow() as uow:
        await uow.holds.confirm(hold.hold_id, uuid.uuid4(), 1200)
        await uow.commit()
    with pytest.raises(HoldNotActive):
        await cancel_hold(CancelHold(hold.hold_id, 7), world.deps)
    assert world.seats(sid)["F1"] == "BOOKED" and world.events("SeatsReleased") == []
