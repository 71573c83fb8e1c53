"""The door on the fakes: why a scan is refused (domain/door.py) and how a check-in and an offline batch are
judged (service_layer/door.py), with TicketCheckedIn once per booking."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hold_service.domain import door
from hold_service.domain.door import BookingAtDoor, Scan
from hold_service.domain.errors import (
    AlreadyCheckedIn,
    CheckinClosed,
    InvalidScan,
    TicketInvalid,
    TicketRevoked,
    TooEarly,
    WrongShowtime,
)
from hold_service.domain.model import HoldSeats
from hold_service.service_layer.door import check_in, check_in_batch, counts
from hold_service.service_layer.holds import hold_seats
from ticketing.tickets import TicketPayload, private_key_from_seed, sign_ticket

START = datetime(2030, 1, 1, 20, tzinfo=UTC)
BOOKING = BookingAtDoor(uuid.uuid4(), 7, 42, "BOOKED", ("F1",), (), None, None, "Film", START, 100, "ON_SALE")


@pytest.mark.parametrize(("booking", "at", "offline", "refused"), [
    (None, START, False, TicketInvalid),
    (replace(BOOKING, showtime_id=43), START, False, TicketInvalid),
    (replace(BOOKING, status="CANCELLED"), START, False, TicketRevoked),
    (replace(BOOKING, showtime_status="CANCELLED"), START, False, TicketRevoked),
    (replace(BOOKING, checked_in_at=START, checked_in_door="A"), START, False, AlreadyCheckedIn),
    (replace(BOOKING, checked_in_at=START, checked_in_door="A"), START - timedelta(minutes=1), False,
     AlreadyCheckedIn),  # online: the first recorded stays
    (replace(BOOKING, checked_in_at=START, checked_in_door="A"), START + timedelta(seconds=1), True,
     AlreadyCheckedIn),
    (replace(BOOKING, checked_in_at=START, checked_in_door="A"), START - timedelta(seconds=1), True, None),
    (replace(BOOKING, checked_in_at=START, checked_in_door="A"), START, True, None),  # its own repeat (door A)
    (BOOKING, START - timedelta(minutes=60, seconds=1), False, TooEarly),
    (BOOKING, START - timedelta(minutes=60), False, None),
    (BOOKING, START + timedelta(minutes=100), False, CheckinClosed),
    (replace(BOOKING, duration_minutes=None), START + timedelta(minutes=179), False, None),
    (replace(BOOKING, duration_minutes=None), START + timedelta(minutes=180), False, CheckinClosed),
])
def test_why_a_scan_is_refused(booking, at, offline, refused) -> None:  # type: ignore[no-untyped-def]
    found = door.refusal(booking, 42, at, "A", 60, offline=offline)
    assert (found is None) if refused is None else isinstance(found, refused), found


async def booked_ticket(world, sid: int, *seats: str) -> tuple[uuid.UUID, str]:  # type: ignore[no-untyped-def]
    hold = await hold_seats(HoldSeats(showtime_id=sid, customer_id=7, seats=list(seats)), world.deps)
    async with world.deps.uow() as uow:
        assert await uow.holds.confirm(hold.hold_id, uuid.uuid4(), 1200)
        await uow.commit()
    return hold.booking_id, world.deps.tickets.sign(TicketPayload(str(hold.booking_id), sid, tuple(seats)))


async def test_a_check_in_admits_once_and_writes_one_event(fakes) -> None:
    world = fakes.fake_deps(checkin_opens_minutes=2 * 24 * 60)  # the fakes' showtimes start a day later
    sid = await world.showtime({"F": 4})
    booking_id, ticket = await booked_ticket(world, sid, "F1", "F2")
    done = await check_in(Scan(ticket, sid, "A"), world.deps)
    assert (done.booking.booking_id, done.booking.seats, done.at, done.door) == (booking_id, ("F1", "F2"),
                                                                                 world.clock.now(), "A")
    world.clock.advance(5)
    with pytest.raises(AlreadyCheckedIn) as again:
        await check_in(Scan(ticket, sid, "B"), world.deps)
    assert (again.value.at, again.value.door) == (done.at, "A")
    assert [(e.data.door, e.bookingId) for e in world.events("TicketCheckedIn")] == [("A", booking_id)]
    assert (await counts(sid, world.deps)).admitted_seats == 2
    with pytest.raises(WrongShowtime):
        await check_in(Scan(ticket, sid + 1, "A"), world.deps)
    forged = sign_ticket(TicketPayload(str(booking_id), sid, ("F1", "F2")),
                         private_key_from_seed("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="))
    with pytest.raises(TicketInvalid):
        await check_in(Scan(forged, sid, "A"), world.deps)


async def test_a_batch_applies_the_earliest_scan_first_and_answers_in_order(fakes) -> None:
    world = fakes.fake_deps(checkin_opens_minutes=2 * 24 * 60, checkin_clock_skew_seconds=60)
    sid = await world.showtime({"F": 4})
    booking_id, ticket = await booked_ticket(world, sid, "F3")
    now = world.clock.now()
    scans = [Scan(ticket, sid, "B", now - timedelta(seconds=10)), Scan(ticket, sid, "A", now - timedelta(seconds=20)),
             Scan(ticket, sid, "C", now + timedelta(seconds=61)), Scan(ticket, sid, "D", now + timedelta(seconds=59))]
    answers = await check_in_batch(scans, world.deps)
    assert isinstance(answers[0], AlreadyCheckedIn) and answers[0].door == "A"
    assert not isinstance(answers[1], Exception) and answers[1].door == "A"
    assert isinstance(answers[2], InvalidScan)
    assert isinstance(answers[3], AlreadyCheckedIn)
    again = await check_in_batch(scans[:2], world.deps)  # sent again: the same answers
    assert [type(a).__name__ for a in again] == ["AlreadyCheckedIn", "Admitted"]
    assert [e.data.door for e in world.events("TicketCheckedIn")] == ["A"]
    assert booking_id == answers[1].booking.booking_id  # type: ignore[union-attr]
