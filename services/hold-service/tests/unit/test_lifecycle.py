"""sweep_expired and confirm_booking (PaymentSucceeded) on the fakes."""

from __future__ import annotations

import uuid

from hold_service.domain.commands import CancelHold, ConfirmBooking
from hold_service.domain.model import HoldSeats
from hold_service.service_layer.holds import cancel_hold, get_hold, hold_seats
from hold_service.service_layer.lifecycle import BACKLOG_HOLDS, BACKLOG_OLDEST, confirm_booking, sweep_expired


async def hold(world, sid: int, customer: int, *seats: str):  # type: ignore[no-untyped-def]
    return await hold_seats(HoldSeats(showtime_id=sid, customer_id=customer, seats=list(seats)), world.deps)


async def confirm(world, booking_id: uuid.UUID, payment_id: uuid.UUID, paid: int = 1200) -> str:  # type: ignore[no-untyped-def]
    """As the PaymentSucceeded consumer runs it: in a unit of work it commits afterwards."""
    async with world.deps.uow() as uow:
        outcome = await confirm_booking(ConfirmBooking(booking_id, payment_id, paid), uow)
        await uow.commit()
    return outcome


async def test_the_sweeper_ends_expired_holds_only(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60)
    sid = await world.showtime()
    old = await hold(world, sid, 7, "F1", "F2")
    world.clock.advance(30)
    live = await hold(world, sid, 8, "F3")
    world.clock.advance(31)
    assert await sweep_expired(world.deps) == 1
    assert await sweep_expired(world.deps) == 0
    assert [(h.hold_id, h.status) for h in world.holds()] == [(old.hold_id, "EXPIRED"), (live.hold_id, "HELD")]
    assert [s["status"] for s in (await world.seat_map(sid))["seats"][:3]] == ["AVAILABLE", "AVAILABLE", "HELD"]
    (released,) = world.events("SeatsReleased")
    assert (released.data.holdId, released.data.seats, released.data.reason) == (old.hold_id, ["F1", "F2"], "EXPIRED")
    assert (await hold(world, sid, 9, "F1")).status == "HELD"  # the gate let go of the swept seats


async def test_the_sweeper_runs_batches_while_a_backlog_remains_up_to_its_bound(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60, sweep_batch_size=2, sweep_max_batches=3)
    sid = await world.showtime()
    for customer, seat in enumerate(("F1", "F2", "F3", "F4", "F5", "F6", "F7"), 1):
        await hold(world, sid, customer, seat)
    world.clock.advance(61)
    assert [await sweep_expired(world.deps) for _ in range(3)] == [6, 1, 0]  # 2 + 2 + 2, then what was left


async def test_a_sweep_exports_the_backlog_it_leaves(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60, sweep_batch_size=1, sweep_max_batches=1)
    sid = await world.showtime()
    for customer, seat in enumerate(("F1", "F2", "F3"), 1):
        await hold(world, sid, customer, seat)
        world.clock.advance(10)
    world.clock.advance(55)  # the holds expired 25, 15 and 5 s ago
    assert await sweep_expired(world.deps) == 1  # the oldest
    assert (gauge(BACKLOG_HOLDS), gauge(BACKLOG_OLDEST)) == (2, 15)
    await sweep_expired(world.deps)
    await sweep_expired(world.deps)
    assert (gauge(BACKLOG_HOLDS), gauge(BACKLOG_OLDEST)) == (0, 0)


def gauge(metric) -> float:  # type: ignore[no-untyped-def]
    return float(metric._value.get())


async def test_a_payment_in_time_books_the_hold(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime(price_cents=1200)
    held = await hold(world, sid, 7, "F1", "F2")
    payment = uuid.uuid4()
    assert await confirm(world, held.booking_id, payment, paid=2000) == "confirmed"
    booked = await get_hold(held.hold_id, 7, world.deps)
    assert (booked.status, booked.payment_id) == ("BOOKED", payment)
    assert world.seats(sid)["F1"] == world.seats(sid)["F2"] == "BOOKED"
    (confirmed,) = world.events("BookingConfirmed")
    assert (confirmed.data.amountCents, confirmed.data.discountCents, confirmed.data.paymentId) == (2000, 400, payment)


async def test_the_same_payment_again_changes_nothing(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    payment = uuid.uuid4()
    await confirm(world, held.booking_id, payment)
    assert await confirm(world, held.booking_id, payment) == "already_booked"
    assert [e.type for e in world.events()] == ["SeatsHeld", "BookingConfirmed"]


async def test_a_payment_after_expiry_ends_the_hold_and_fails_the_booking(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=60)
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    world.clock.advance(61)
    payment = uuid.uuid4()
    assert await confirm(world, held.booking_id, payment) == "HOLD_EXPIRED"
    assert [h.status for h in world.holds()] == ["EXPIRED"] and world.seats(sid)["F1"] == "AVAILABLE"
    released, failed = world.events()[1:]
    assert (released.type, released.data.reason) == ("SeatsReleased", "EXPIRED")
    assert (failed.type, failed.data.paymentId, failed.data.reason) == ("BookingFailed", payment, "HOLD_EXPIRED")


async def test_a_payment_for_a_released_hold_fails_the_booking(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    await cancel_hold(CancelHold(held.hold_id, 7), world.deps)
    payment = uuid.uuid4()
    assert await confirm(world, held.booking_id, payment) == "HOLD_RELEASED"
    assert await confirm(world, held.booking_id, payment) == "HOLD_RELEASED"  # applied again: the same event
    assert [e.data.reason for e in world.events("BookingFailed")] == ["HOLD_RELEASED"]
    assert [h.status for h in world.holds()] == ["RELEASED"]


async def test_a_second_payment_of_a_booked_hold_fails_its_booking(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    first, second = uuid.uuid4(), uuid.uuid4()
    await confirm(world, held.booking_id, first)
    assert await confirm(world, held.booking_id, second) == "HOLD_RELEASED"
    assert (await get_hold(held.hold_id, 7, world.deps)).payment_id == first
    assert [e.data.paymentId for e in world.events("BookingFailed")] == [second]


async def test_a_payment_for_an_unknown_booking_changes_nothing(fakes) -> None:
    world = fakes.fake_deps()
    assert await confirm(world, uuid.uuid4(), uuid.uuid4()) == "unknown"
    assert world.events() == []


async def test_a_confirmation_whose_transaction_does_not_commit_leaves_the_hold_held(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    async with world.deps.uow() as uow:  # the consumer's transaction fails after the handler
        assert await confirm_booking(ConfirmBooking(held.booking_id, uuid.uuid4(), 1200), uow) == "confirmed"
    assert (await get_hold(held.hold_id, 7, world.deps)).status == "HELD"
    assert [e.type for e in world.events()] == ["SeatsHeld"]
