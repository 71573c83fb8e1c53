"""The RoomStore port's contract (sql/waiting_room.sql: the operator's modes, the automatic opening and closing,
the facts an admission step decides on), run against the fake (tests/fakes/rooms.py) and the real store on
Postgres: a rule changed in the SQL and not in the fake fails here."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hold_service.domain.commands import ConfigureRoom

pytestmark = pytest.mark.integration
SOON = timedelta(hours=2)


def state(config):  # type: ignore[no-untyped-def]
    return None if config is None else (config.mode, config.enabled, config.active_limit)


async def test_the_operator_turns_a_room_on_and_off_and_the_automatic_mode_keeps_its_state(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    rooms = ports.rooms
    assert await rooms.configure(ConfigureRoom(sid + 1, True, 10, None)) is None  # no such showtime
    on, changed = await rooms.configure(ConfigureRoom(sid, True, 10, None))
    assert (state(on), changed) == (("on", True, 10), True)
    again, changed = await rooms.configure(ConfigureRoom(sid, True, 20, None))
    assert (state(again), changed) == (("on", True, 20), False)
    auto, changed = await rooms.configure(ConfigureRoom(sid, False, 20, None, mode="auto"))
    assert (state(auto), changed) == (("auto", True, 20), False)  # as it was
    off, changed = await rooms.configure(ConfigureRoom(sid, False, 20, None))
    assert (state(off), changed) == (("off", False, 20), True)
    assert state(await rooms.config(sid)) == ("off", False, 20)
    assert await rooms.open_automatically(sid, "ARRIVALS", 50) is None  # forced off


async def test_a_rush_opens_an_automatic_room_once_and_only_for_a_sale_still_on(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    rooms, before = ports.rooms, await ports.rooms.rooms_on()
    opened = await rooms.open_automatically(sid, "ARRIVALS", 50)
    assert (state(opened), opened.changed_reason) == (("auto", True, 50), "ARRIVALS")
    assert await rooms.open_automatically(sid, "ACTIVE", 50) is None  # on already
    assert await rooms.rooms_on() == before + 1
    assert sid in [c.showtime_id for c in await rooms.automatic_rooms(10**6)]
    started = await ports.showtime(starts_in=-timedelta(minutes=1))
    assert await rooms.open_automatically(started, "ARRIVALS", 50) is None
    cancelled = await ports.showtime(starts_in=SOON)
    async with ports.uow() as uow:
        await uow.holds.cancel_showtime(cancelled, "OPERATOR")
        await uow.commit()
    assert await rooms.open_automatically(cancelled, "ARRIVALS", 50) is None
    assert await rooms.open_automatically(sid + 10**6, "ARRIVALS", 50) is None


async def test_an_automatic_room_closes_once_its_rush_has_been_over_long_enough(ports) -> None:
    sid = await ports.showtime(starts_in=SOON)
    rooms = ports.rooms
    assert await rooms.note_quiet(sid, True) is None  # no open automatic room
    await rooms.open_automatically(sid, "ARRIVALS", 50)
    since = await rooms.note_quiet(sid, True)
    assert since is not None and await rooms.note_quiet(sid, True) == since  # since the first quiet moment
    assert await rooms.note_quiet(sid, False) is None
    since = await rooms.note_quiet(sid, True)
    assert await rooms.close_automatically(sid, 3600) is None
    await ports.elapse(0.6)
    closed = await rooms.close_automatically(sid, 0.3)
    assert (state(closed), closed.changed_reason) == (("auto", False, 50), "RUSH_OVER")
    assert await rooms.close_automatically(sid, 0.3) is None
    assert sid not in [c.showtime_id for c in await rooms.automatic_rooms(10**6)]


async def test_a_step_s_facts_count_seats_with_lazy_expiry_and_the_customers_holding(ports, h) -> None:
    sid = await ports.showtime(seats=4, starts_in=SOON)
    rooms = ports.rooms
    assert await rooms.facts(sid) is None  # no room
    await rooms.configure(ConfigureRoom(sid, True, 10, None))
    live, _ = await ports.take(sid, ["A1"])
    await ports.take(sid, ["A2"], ttl=0.3)
    await ports.booked(sid, ["A3"])
    await ports.elapse(0.6)
    facts = await rooms.facts(sid)
    assert (facts.available, facts.held, facts.holders, facts.lease_ms, facts.seed, facts.started) == (
        2, 1, [live.customer_id], 0, None, False)
    assert state(facts.config) == ("on", True, 10)
    lease = await rooms.extend_lease(sid, 600)
    assert await rooms.extend_lease(sid, 60) == lease  # never shortened
    at = ports.now().timestamp() * 1000
    assert at + 590_000 <= lease <= at + 610_000
    seed = uuid.uuid4().hex
    assert (await rooms.fix_seed(sid, seed), await rooms.fix_seed(sid, "later")) == (seed, seed)
    await rooms.mark_started(sid)
    facts = await rooms.facts(sid)
    assert (facts.lease_ms, facts.seed, facts.started) == (lease, seed, True)
