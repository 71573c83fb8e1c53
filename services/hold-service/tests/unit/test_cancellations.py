"""A customer's cancellation and an operator's cancelled showtime, on the fakes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hold_service.domain.commands import CancelBooking, CancelShowtime, ConfirmBooking
from hold_service.domain.errors import CancellationClosed, HoldNotActive, HoldNotFound, ShowtimeClosed
from hold_service.domain.model import HoldSeats
from hold_service.service_layer.cancellations import cancel_booking, cancel_showtime, finish_cancelled_showtimes
from hold_service.service_layer.holds import hold_seats
from hold_service.service_layer.lifecycle import confirm_booking


async def booked(world, sid: int, customer: int, *seats: str, paid: int = 2400):  # type: ignore[no-untyped-def]
    hold = await hold_seats(HoldSeats(showtime_id=sid, customer_id=customer, seats=list(seats)), world.deps)
    payment = uuid.uuid4()
    assert await confirm(world, hold.booking_id, payment, paid) == "confirmed"
    return hold, payment


async def confirm(world, booking_id: uuid.UUID, payment_id: uuid.UUID, paid: int) -> str:  # type: ignore[no-untyped-def]
    async with world.deps.uow() as uow:
        outcome = await confirm_booking(ConfirmBooking(booking_id, payment_id, paid), uow)
        await uow.commit()
    return outcome


async def test_booking_confirmed_carries_what_the_ticket_shows(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime({"F": 4})
    await booked(world, sid, 7, "F1", "F2")
    (confirmed,) = world.events("BookingConfirmed")
    assert (confirmed.data.title, confirmed.data.timeZone, confirmed.data.cinema) == ("Test", "UTC", None)
    assert [(t.seat, t.ticketType, t.priceCents) for t in confirmed.data.tickets] == [("F1", "ADULT", 1200),
                                                                                    ("F2", "ADULT", 1200)]


async def test_the_owner_cancels_a_booking_its_seats_go_back_on_sale_once(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime({"F": 4})
    hold, payment = await booked(world, sid, 7, "F1", "F2")
    before = (await world.seat_map(sid))["version"]
    with pytest.raises(HoldNotFound):
        await cancel_booking(CancelBooking(hold.booking_id, 8), world.deps)  # another customer's: not found
    done = await cancel_booking(CancelBooking(hold.booking_id, 7), world.deps)
    assert done.outcome == "CANCELLED"
    assert (await world.seat_map(sid))["version"] == before + 1
    assert world.seats(sid) == {f"F{n}": "AVAILABLE" for n in range(1, 5)}
    (cancelled,) = world.events("BookingCancelled")
    data = cancelled.data
    assert (data.reason, data.paymentId, data.seats) == ("CUSTOMER", payment, ["F1", "F2"])
    assert (await cancel_booking(CancelBooking(hold.booking_id, 7), world.deps)).outcome == "ALREADY"
    assert len(world.events("BookingCancelled")) == 1
    assert (await hold_seats(HoldSeats(showtime_id=sid, customer_id=9, seats=["F1"]), world.deps)).status == "HELD"


async def test_a_booking_cannot_be_cancelled_within_the_deadline_nor_a_hold_that_is_not_booked(fakes) -> None:
    world = fakes.fake_deps(cancellation_deadline_minutes=60)
    sid = await world.showtime({"F": 4})  # starts in a day
    hold, _ = await booked(world, sid, 7, "F1")
    world.clock.advance(timedelta(hours=23, minutes=1).total_seconds())  # 59 minutes before the start
    with pytest.raises(CancellationClosed):
        await cancel_booking(CancelBooking(hold.booking_id, 7), world.deps)
    assert world.events("BookingCancelled") == [] and world.seats(sid)["F1"] == "BOOKED"
    held = await hold_seats(HoldSeats(showtime_id=sid, customer_id=7, seats=["F2"]), world.deps)
    with pytest.raises(HoldNotActive):
        await cancel_booking(CancelBooking(held.booking_id, 7), world.deps)


async def test_a_cancelled_showtime_ends_every_hold_and_booking_and_sells_nothing_more(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime({"F": 6})
    first, _ = await booked(world, sid, 7, "F1", "F2")
    second, _ = await booked(world, sid, 8, "F3")
    held = await hold_seats(HoldSeats(showtime_id=sid, customer_id=9, seats=["F4"]), world.deps)
    paying = await hold_seats(HoldSeats(showtime_id=sid, customer_id=10, seats=["F5"]), world.deps)
    assert await cancel_showtime(CancelShowtime(sid, "projector failure"), world.deps) == 4
    (showtime,) = world.events("ShowtimeCancelled")
    assert (showtime.showtimeId, showtime.data.reason) == (sid, "projector failure")
    assert sorted((e.bookingId, e.data.reason) for e in world.events("BookingCancelled")) == sorted(
        [(first.booking_id, "SHOWTIME_CANCELLED"), (second.booking_id, "SHOWTIME_CANCELLED")])
    assert sorted((e.data.holdId, e.data.reason) for e in world.events("SeatsReleased")) == sorted(
        [(held.hold_id, "SHOWTIME_CANCELLED"), (paying.hold_id, "SHOWTIME_CANCELLED")])
    assert set(world.seats(sid).values()) == {"AVAILABLE"}
    with pytest.raises(ShowtimeClosed):
        await hold_seats(HoldSeats(showtime_id=sid, customer_id=11, seats=["F6"]), world.deps)
    payment = uuid.uuid4()  # the customer paid just as it was cancelled: the payment is refunded
    assert await confirm(world, paying.booking_id, payment, 1200) == "HOLD_RELEASED"
    assert await cancel_showtime(CancelShowtime(sid, "again"), world.deps) == 0  # a repeat changes nothing
    assert len(world.events("ShowtimeCancelled")) == 1 and len(world.events("BookingCancelled")) == 2


async def test_a_payment_of_a_hold_whose_showtime_was_cancelled_is_refused_and_its_hold_released(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime({"F": 2})
    hold = await hold_seats(HoldSeats(showtime_id=sid, customer_id=7, seats=["F1"]), world.deps)
    async with world.deps.uow() as uow:  # the showtime is cancelled, its holds not ended yet
        await uow.holds.cancel_showtime(sid, "fire")
        await uow.commit()
    assert await confirm(world, hold.booking_id, uuid.uuid4(), 1200) == "HOLD_RELEASED"
    (released,) = world.events("SeatsReleased")
    assert (released.data.holdId, released.data.reason) == (hold.hold_id, "SHOWTIME_CANCELLED")
    (failed,) = world.events("BookingFailed")
    assert failed.data.reason == "HOLD_RELEASED"


async def test_the_sweeper_finishes_a_cancellation_that_was_interrupted(fakes) -> None:
    world = fakes.fake_deps()
    sid, other = await world.showtime({"F": 4}), await world.showtime({"F": 4})
    first, _ = await booked(world, sid, 7, "F1")
    held = await hold_seats(HoldSeats(showtime_id=sid, customer_id=8, seats=["F2"]), world.deps)
    untouched, _ = await booked(world, other, 9, "F1")
    async with world.deps.uow() as uow:  # the operator's call stopped right after cancelling the showtime
        await uow.holds.cancel_showtime(sid, "projector failure")
        await uow.commit()
    assert await finish_cancelled_showtimes(world.deps) == 2
    assert [(e.bookingId, e.data.reason) for e in world.events("BookingCancelled")] == [
        (first.booking_id, "SHOWTIME_CANCELLED")]
    assert [e.data.holdId for e in world.events("SeatsReleased")] == [held.hold_id]
    assert await finish_cancelled_showtimes(world.deps) == 0
    assert world.seats(other)["F1"] == "BOOKED" and untouched.status == "HELD"
