"""The contract of DoorRepository, run against the fake (tests/fakes/) and the real adapter on Postgres: one
admission per booked booking, an earlier offline scan taking the place of a later one, and the counts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

pytestmark = pytest.mark.integration
T0 = datetime(2031, 1, 1, 19, 30, tzinfo=UTC)


async def admit(ports, booking_id: uuid.UUID, at: datetime, door: str, offline: bool = False) -> bool:  # type: ignore[no-untyped-def]
    async with ports.uow() as uow:
        done: bool = await uow.door.admit(booking_id, at, door, offline)
        await uow.commit()
    return done


async def at_door(ports, booking_id: uuid.UUID):  # type: ignore[no-untyped-def]
    async with ports.uow() as uow:
        return await uow.door.booking(booking_id)


async def test_a_booked_booking_is_admitted_once_and_remembers_when_and_where(ports) -> None:
    sid = await ports.showtime()
    request = await ports.booked(sid, ["A1", "A2"])
    before = await at_door(ports, request.booking_id)
    assert (before.status, before.seats, before.showtime_id, before.title, before.showtime_status) == (
        "BOOKED", ("A1", "A2"), sid, "Contract", "ON_SALE")
    assert (before.checked_in_at, before.checked_in_door, [t.seat for t in before.tickets]) == (None, None,
                                                                                                 ["A1", "A2"])
    assert await admit(ports, request.booking_id, T0, "A")
    assert not await admit(ports, request.booking_id, T0 - timedelta(minutes=1), "B")  # online: first recorded
    after = await at_door(ports, request.booking_id)
    assert (after.checked_in_at, after.checked_in_door) == (T0, "A")


async def test_an_earlier_offline_scan_takes_the_place_of_a_later_admission(ports) -> None:
    sid = await ports.showtime()
    request = await ports.booked(sid, ["A3"])
    assert await admit(ports, request.booking_id, T0, "B", offline=True)
    assert not await admit(ports, request.booking_id, T0 + timedelta(seconds=1), "C", offline=True)
    assert not await admit(ports, request.booking_id, T0, "C", offline=True)  # not earlier: the first stays
    assert await admit(ports, request.booking_id, T0 - timedelta(seconds=30), "A", offline=True)
    after = await at_door(ports, request.booking_id)
    assert (after.checked_in_at, after.checked_in_door) == (T0 - timedelta(seconds=30), "A")


async def test_only_a_booked_booking_is_admitted(ports) -> None:
    sid = await ports.showtime()
    request, _ = await ports.take(sid, ["A4"])
    assert not await admit(ports, request.booking_id, T0, "A")  # held, not booked
    assert (await at_door(ports, request.booking_id)).checked_in_at is None
    assert await at_door(ports, uuid.uuid4()) is None


async def test_an_admission_left_uncommitted_is_not_one(ports) -> None:
    sid = await ports.showtime()
    request = await ports.booked(sid, ["A5"])
    async with ports.uow() as uow:
        assert await uow.door.admit(request.booking_id, T0, "A", False)
    assert await admit(ports, request.booking_id, T0, "B")


async def test_the_counts_are_booked_against_admitted(ports) -> None:
    sid = await ports.showtime()
    first, _second = await ports.booked(sid, ["A1", "A2"]), await ports.booked(sid, ["A3"])
    await ports.take(sid, ["A6"])  # a hold is not expected at the door
    assert await admit(ports, first.booking_id, T0, "A")
    async with ports.uow() as uow:
        counts = await uow.door.counts(sid)
    assert (counts.booked, counts.booked_seats, counts.admitted, counts.admitted_seats) == (2, 3, 1, 2)
