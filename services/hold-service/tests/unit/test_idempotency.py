"""hold_seats with an Idempotency-Key (service_layer/idempotency.py), on the fakes."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from hold_service.domain.commands import CancelHold
from hold_service.domain.errors import IdempotencyKeyReused, InvalidSeats, RateLimited, SeatsUnavailable
from hold_service.domain.model import HoldSeats
from hold_service.service_layer.holds import cancel_hold, hold_seats


def keyed(showtime_id: int, customer_id: int, seats: list[str], key: str | None = "k1") -> HoldSeats:
    return HoldSeats(showtime_id=showtime_id, customer_id=customer_id, seats=seats, idempotency_key=key)


async def test_without_a_key_every_request_is_a_new_hold(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    first = await hold_seats(keyed(sid, 7, ["F1"], None), world.deps)
    second = await hold_seats(keyed(sid, 7, ["F2"], None), world.deps)
    assert first.hold_id != second.hold_id and len(world.holds()) == 2


async def test_a_replay_returns_the_first_hold_and_holds_nothing_more(fakes) -> None:
    world = fakes.fake_deps(hold_rate_limit_per_minute=1)
    sid = await world.showtime()
    first = await hold_seats(keyed(sid, 7, ["F2", "F1"]), world.deps)
    replay = await hold_seats(keyed(sid, 7, ["F1", "F2"]), world.deps)  # the same seats in another order
    assert replay == first
    assert len(world.holds()) == 1 and len(world.events("SeatsHeld")) == 1  # nor a rate-limit hit: limit is 1


async def test_another_body_under_the_key_is_refused(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    await hold_seats(keyed(sid, 7, ["F1"]), world.deps)
    with pytest.raises(IdempotencyKeyReused):
        await hold_seats(keyed(sid, 7, ["F2"]), world.deps)
    assert world.seats(sid)["F2"] == "AVAILABLE"
    assert (await hold_seats(keyed(sid, 8, ["F2"]), world.deps)).seats == ["F2"]  # keys are per customer


async def test_twins_under_one_key_get_one_hold(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    twins = await asyncio.gather(*(hold_seats(keyed(sid, 7, ["F1", "F2"]), world.deps) for _ in range(3)))
    assert len({t.hold_id for t in twins}) == 1
    assert len(world.holds()) == 1 and len(world.events("SeatsHeld")) == 1


async def test_a_retry_after_a_crash_between_hold_and_stored_outcome_gets_that_hold(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    cmd = keyed(sid, 7, ["F1"])
    async with world.deps.uow() as uow:  # the first attempt claimed the key and wrote the hold, then died
        await uow.keys.claim(7, "k1", cmd.fingerprint())
        await uow.commit()
    written = await hold_seats(replace(cmd.keyed(), idempotency_key=None), world.deps)  # no key handling
    retry = await hold_seats(keyed(sid, 7, ["F1"]), world.deps)
    assert retry.hold_id == written.hold_id and len(world.holds()) == 1


async def test_a_stored_refusal_is_replayed_even_once_the_seats_are_free(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    other = await hold_seats(keyed(sid, 8, ["F1"], None), world.deps)
    with pytest.raises(SeatsUnavailable):
        await hold_seats(keyed(sid, 7, ["F1"]), world.deps)
    await cancel_hold(CancelHold(other.hold_id, 8), world.deps)
    with pytest.raises(SeatsUnavailable) as replayed:
        await hold_seats(keyed(sid, 7, ["F1"]), world.deps)
    assert (replayed.value.seats, replayed.value.decided_by) == (["F1"], "gate")
    assert world.seats(sid)["F1"] == "AVAILABLE"


async def test_what_is_not_definitive_is_not_stored(fakes) -> None:
    world = fakes.fake_deps(hold_rate_limit_per_minute=1)
    sid = await world.showtime()
    with pytest.raises(InvalidSeats):
        await hold_seats(keyed(sid, 7, ["F1", "F1"]), world.deps)  # claims nothing: a 422
    await hold_seats(keyed(sid, 7, ["F9"], None), world.deps)
    with pytest.raises(RateLimited):
        await hold_seats(keyed(sid, 7, ["F1"]), world.deps)
    world.clock.advance(60)
    assert (await hold_seats(keyed(sid, 7, ["F1"]), world.deps)).seats == ["F1"]  # runs again
