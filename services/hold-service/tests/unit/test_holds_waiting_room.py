"""hold_seats and cancel_hold with the showtime's waiting room on, and the per-address limit, on the fakes.
(The queue itself, its steps and tokens handed out by polls run on Redis: tests/integration/test_waiting_room*.)"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hold_service.domain.commands import CancelHold, ConfigureRoom
from hold_service.domain.errors import AdmissionRequired, RateLimited
from hold_service.domain.model import HoldSeats
from hold_service.domain.waiting_room import AdmissionPass
from hold_service.service_layer.holds import cancel_hold, hold_seats
from hold_service.service_layer.waiting_room import configure_room


async def _room_on(world, limit: int = 2) -> int:  # type: ignore[no-untyped-def]
    sid: int = await world.showtime()
    await configure_room(ConfigureRoom(sid, enabled=True, active_limit=limit, opens_at=None), world.deps)
    return sid


def _admitted(world, sid: int, customer: int) -> str:  # type: ignore[no-untyped-def]
    """What a poll hands an admitted customer: his slot in the queue and its signed token."""
    admission = AdmissionPass(customer, sid, slot_ms=int(world.clock.now().timestamp() * 1000) + 180_000)
    world.deps.queue.admit(admission)
    token: str = world.deps.credentials.admission_token(admission)
    return token


def ask(sid: int, customer: int, *seats: str, token: str | None = None, address: str | None = None) -> HoldSeats:
    return HoldSeats(showtime_id=sid, customer_id=customer, seats=list(seats), admission_token=token, address=address)


async def test_while_the_room_is_on_a_hold_needs_the_customers_own_admission(fakes) -> None:
    world = fakes.fake_deps()
    sid = await _room_on(world)
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 7, "F1"), world.deps)
    other = _admitted(world, sid, 8)
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 7, "F1", token=other), world.deps)  # another customer's token
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 7, "F1", token="forged"), world.deps)
    assert world.seats(sid)["F1"] == "AVAILABLE" and [e.type for e in world.events()] == ["WaitingRoomOpened"]
    assert (await hold_seats(ask(sid, 7, "F1", token=_admitted(world, sid, 7)), world.deps)).status == "HELD"


async def test_a_slot_that_ended_admits_no_more_holds_and_cancelling_ends_it(fakes) -> None:
    world = fakes.fake_deps()
    sid = await _room_on(world)
    token = _admitted(world, sid, 7)
    hold = await hold_seats(ask(sid, 7, "F1", token=token), world.deps)
    await cancel_hold(CancelHold(hold.hold_id, 7), world.deps)
    assert world.deps.queue.left == [(sid, 7)]  # the next in the queue may come in
    with pytest.raises(AdmissionRequired, match="ended"):
        await hold_seats(ask(sid, 7, "F2", token=token), world.deps)
    assert world.seats(sid)["F2"] == "AVAILABLE"


async def test_with_the_room_turned_off_holds_need_no_token(fakes) -> None:
    world = fakes.fake_deps()
    sid = await _room_on(world)
    room = await world.deps.rooms.config(sid)
    await configure_room(ConfigureRoom(sid, enabled=False, active_limit=room.active_limit, opens_at=room.opens_at),
                         world.deps)
    assert (await hold_seats(ask(sid, 7, "F1"), world.deps)).status == "HELD"
    after = await world.deps.rooms.config(sid)
    assert replace(room, enabled=False, mode="off", changed_reason="OPERATOR", changed_at=after.changed_at) == after
    assert [e.type for e in world.events() if e.type.startswith("WaitingRoom")] == ["WaitingRoomOpened",
                                                                                      "WaitingRoomClosed"]


async def test_the_per_address_limit_counts_every_customer_behind_one_address(fakes) -> None:
    world = fakes.fake_deps(hold_rate_limit_per_ip_per_minute=2)
    sid = await world.showtime()
    for customer, seat in ((7, "F1"), (8, "F2")):
        await hold_seats(ask(sid, customer, seat, address="203.0.113.9"), world.deps)
    with pytest.raises(RateLimited):
        await hold_seats(ask(sid, 9, "F3", address="203.0.113.9"), world.deps)
    assert world.seats(sid)["F3"] == "AVAILABLE"
    assert (await hold_seats(ask(sid, 9, "F3", address="203.0.113.10"), world.deps)).status == "HELD"
