"""The automatic waiting room on the fakes: when it opens and closes (domain/room_rush.py), and what the hold path
and the worker's `rooms` role do with it (service_layer/room_rush.py). The counting itself is Lua, tested on
Redis (tests/integration/test_room_rush.py)."""

from __future__ import annotations

import random

import pytest
from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.errors import AdmissionRequired
from hold_service.domain.model import HoldSeats
from hold_service.domain.room_rush import Crowd, RoomLoad, Thresholds, enabled_after, opening_reason, rush_over
from hold_service.domain.waiting_room import RoomFigures, StepOutcome
from hold_service.service_layer import room_steps
from hold_service.service_layer.holds import hold_seats
from hold_service.service_layer.room_rush import watch_rooms
from hold_service.service_layer.room_steps import advance_room
from hold_service.service_layer.waiting_room import configure_room
from prometheus_client import REGISTRY

LOW = {"waiting_room_auto_open_at_arrivals_per_minute": 10, "waiting_room_auto_open_at_active": 20,
       "waiting_room_auto_close_after_seconds": 60}
T = Thresholds(arrivals_per_minute=10, active=20)


def test_it_opens_on_arrivals_or_on_active_customers() -> None:
    assert opening_reason(Crowd(9, 19), T) is None
    assert opening_reason(Crowd(10, 0), T) == "ARRIVALS"
    assert opening_reason(Crowd(0, 20), T) == "ACTIVE"
    assert opening_reason(Crowd(50, 50), T) == "ARRIVALS"


def test_the_rush_is_over_when_both_figures_are_low_and_nobody_is_queued() -> None:
    assert rush_over(Crowd(1, 1), RoomLoad(queued=0, sold_out=False), T)
    assert not rush_over(Crowd(1, 1), RoomLoad(queued=3, sold_out=False), T)  # FIFO: the queue drains first
    assert rush_over(Crowd(1, 1), RoomLoad(queued=3, sold_out=True), T)  # nothing left to queue for
    assert not rush_over(Crowd(10, 1), RoomLoad(queued=0, sold_out=False), T)
    assert not rush_over(Crowd(1, 20), RoomLoad(queued=0, sold_out=False), T)


def test_forced_modes_win_and_auto_keeps_the_state_it_found() -> None:
    assert enabled_after("on", False) and not enabled_after("off", True)
    assert enabled_after("auto", True) and not enabled_after("auto", False)


def ask(sid: int, customer: int, *seats: str) -> HoldSeats:
    return HoldSeats(showtime_id=sid, customer_id=customer, seats=list(seats))


def queue_length(sid: int) -> float | None:
    return REGISTRY.get_sample_value("ticketing_waiting_room_queue_length", {"showtime": str(sid)})


def room_events(world) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(e.type, e.data.reason) for e in world.events() if e.type.startswith("WaitingRoom")]


async def test_a_showtime_nobody_configured_opens_itself_at_a_burst_and_keeps_earlier_holds(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await world.showtime()
    before = await hold_seats(ask(sid, 7, "F1"), world.deps)
    world.deps.queue.crowds[sid] = Crowd(arrivals_per_minute=10, active=3)
    with pytest.raises(AdmissionRequired):  # the request that found the rush goes to the queue too
        await hold_seats(ask(sid, 8, "F2"), world.deps)
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 9, "F3"), world.deps)
    room = await world.deps.rooms.config(sid)
    assert room is not None and room.enabled and room.mode == "auto" and room.active_limit == 200
    assert room_events(world) == [("WaitingRoomOpened", "ARRIVALS")]  # once
    assert world.events("WaitingRoomOpened")[0].data.activeLimit == 200
    assert world.seats(sid) == {**{f"F{n}": "AVAILABLE" for n in range(1, 11)}, "F1": "HELD"}
    assert [h.status for h in world.holds()] == ["HELD"] and world.holds()[0].hold_id == before.hold_id


async def test_it_opens_on_active_customers_with_the_operators_thresholds(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await world.showtime()
    await configure_room(ConfigureRoom(sid, False, 50, None, mode="auto", open_at_arrivals=1000, open_at_active=5),
                         world.deps)
    assert not (await world.deps.rooms.config(sid)).enabled and not world.events()  # auto: off until a rush
    world.deps.queue.crowds[sid] = Crowd(arrivals_per_minute=100, active=4)  # under the operator's 1000
    assert (await hold_seats(ask(sid, 7, "F1"), world.deps)).status == "HELD"
    world.deps.queue.crowds[sid] = Crowd(arrivals_per_minute=100, active=5)
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 8, "F2"), world.deps)
    assert room_events(world) == [("WaitingRoomOpened", "ACTIVE")]
    assert world.events("WaitingRoomOpened")[0].data.activeLimit == 50


async def test_forced_off_never_opens_and_forced_on_never_closes(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    off, on = await world.showtime(), await world.showtime()
    await configure_room(ConfigureRoom(off, False, 5, None, mode="off"), world.deps)
    await configure_room(ConfigureRoom(on, True, 5, None, mode="on"), world.deps)
    world.deps.queue.crowds[off] = Crowd(1000, 1000)
    assert (await hold_seats(ask(off, 7, "F1"), world.deps)).status == "HELD"
    world.deps.queue.loads[on] = RoomFigures(0, 0, 0, 0.0, False, 10, 0, True, 0)
    for _ in range(3):
        await watch_rooms(world.deps)
        world.clock.advance(120)
    assert (await world.deps.rooms.config(on)).enabled
    assert room_events(world) == [("WaitingRoomOpened", "OPERATOR")]
    await advance_room(on, world.deps)  # a step, as a poll takes it: the room's series
    assert queue_length(on) == 0
    await configure_room(ConfigureRoom(on, False, 5, None, mode="off"), world.deps)  # the operator closes it
    assert queue_length(on) is None


async def test_the_deployment_may_turn_the_automatic_default_off(fakes) -> None:
    world = fakes.fake_deps(**LOW, waiting_room_auto_default=False)
    sid = await world.showtime()
    world.deps.queue.crowds[sid] = Crowd(1000, 1000)
    assert (await hold_seats(ask(sid, 7, "F1"), world.deps)).status == "HELD"
    assert await world.deps.rooms.config(sid) is None and world.deps.queue.arrived == []


async def test_with_redis_down_nothing_opens_and_holds_go_on(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await world.showtime()
    world.deps.queue.crowds[sid], world.deps.queue.up = Crowd(1000, 1000), False
    assert (await hold_seats(ask(sid, 7, "F1"), world.deps)).status == "HELD"
    assert await world.deps.rooms.config(sid) is None


async def _opened(world) -> int:  # type: ignore[no-untyped-def]
    sid: int = await world.showtime()
    world.deps.queue.crowds[sid] = Crowd(50, 50)
    with pytest.raises(AdmissionRequired):
        await hold_seats(ask(sid, 7, "F1"), world.deps)
    return sid


async def test_it_closes_once_the_rush_has_been_over_for_a_while(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await _opened(world)
    queue = world.deps.queue
    queue.loads[sid] = RoomFigures(0, 3, 10, 5.0, False, 7, 3, True, 0)
    await watch_rooms(world.deps)  # the rush goes on
    queue.crowds[sid] = Crowd(2, 3)
    await watch_rooms(world.deps)  # over, since now
    world.clock.advance(59)
    assert await watch_rooms(world.deps) == 0 and (await world.deps.rooms.config(sid)).enabled
    assert queue_length(sid) == 0  # the room's series, per showtime, while it is open (nobody queued)
    world.clock.advance(1)
    assert await watch_rooms(world.deps) == 1
    assert queue_length(sid) is None  # closed: gone from /metrics (a series per showtime would pile up)
    assert await watch_rooms(world.deps) == 0
    room = await world.deps.rooms.config(sid)
    assert not room.enabled and room.mode == "auto" and room.changed_reason == "RUSH_OVER"
    assert room_events(world) == [("WaitingRoomOpened", "ARRIVALS"), ("WaitingRoomClosed", "RUSH_OVER")]
    queue.crowds[sid] = Crowd(0, 0)
    assert (await hold_seats(ask(sid, 8, "F2"), world.deps)).status == "HELD"  # no token needed any more


async def test_nobody_queued_loses_his_place_the_room_waits_for_its_queue(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await _opened(world)
    world.deps.queue.crowds[sid] = Crowd(0, 0)
    world.deps.queue.loads[sid] = RoomFigures(4, 2, 10, 5.0, False, 7, 3, True, 0)  # 4 still queued
    for _ in range(4):
        await watch_rooms(world.deps)
        world.clock.advance(100)
    assert (await world.deps.rooms.config(sid)).enabled
    world.deps.queue.loads[sid] = RoomFigures(0, 2, 14, 5.0, False, 3, 7, True, 0)  # admitted in turn
    await watch_rooms(world.deps)
    world.clock.advance(60)
    assert await watch_rooms(world.deps) == 1


async def test_a_rush_that_comes_back_restarts_the_quiet_time(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await _opened(world)
    queue = world.deps.queue
    queue.loads[sid] = RoomFigures(0, 0, 10, 5.0, False, 7, 3, True, 0)
    queue.crowds[sid] = Crowd(0, 0)
    await watch_rooms(world.deps)
    world.clock.advance(50)
    queue.crowds[sid] = Crowd(11, 0)
    await watch_rooms(world.deps)
    queue.crowds[sid] = Crowd(0, 0)
    await watch_rooms(world.deps)
    world.clock.advance(50)
    assert await watch_rooms(world.deps) == 0
    world.clock.advance(10)
    assert await watch_rooms(world.deps) == 1


async def test_redis_unable_to_tell_keeps_the_room_open(fakes) -> None:
    world = fakes.fake_deps(**LOW)
    sid = await _opened(world)
    world.deps.queue.loads[sid] = RoomFigures(0, 0, 10, 5.0, False, 7, 3, True, 0)
    world.deps.queue.crowds[sid] = Crowd(0, 0)
    await watch_rooms(world.deps)
    world.deps.queue.up = False
    world.clock.advance(600)
    assert await watch_rooms(world.deps) == 0 and (await world.deps.rooms.config(sid)).enabled


def test_a_room_this_process_stopped_stepping_leaves_its_series_after_a_while() -> None:
    """Another process steps it now, or it closed where this one never saw it: its old figures go from here at
    this process's next step of any room."""
    quiet, busy = random.randint(10**6, 10**9), random.randint(10**6, 10**9)
    figures = StepOutcome(admitted=0, dropped=0, queued=3, active=1, rate_per_minute=0, sold_out=False)
    room_steps._record(quiet, figures, now=1000.0)
    room_steps._record(busy, figures, now=1000.0 + room_steps.STALE_SECONDS - 1)
    assert queue_length(quiet) == 3
    room_steps._record(busy, figures, now=1000.0 + room_steps.STALE_SECONDS + 1)
    assert queue_length(quiet) is None and queue_length(busy) == 3
    room_steps.forget_room(busy)
