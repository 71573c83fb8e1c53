"""extend_hold (payment-service at checkout) and the seat gate's refill after a Redis loss, on the fakes."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from hold_service.domain.commands import CancelHold, ConfirmBooking, ExtendHold
from hold_service.domain.errors import HoldNotActive, HoldNotFound, SeatsUnavailable
from hold_service.domain.model import HoldSeats
from hold_service.service_layer import holds
from hold_service.service_layer.gate_refill import refill_gate
from hold_service.service_layer.lifecycle import confirm_booking, extend_hold


async def hold(world, sid: int, customer: int, *seats: str):  # type: ignore[no-untyped-def]
    return await holds.hold_seats(HoldSeats(showtime_id=sid, customer_id=customer, seats=list(seats)), world.deps)


def extend(held, seconds_from_now: float, world, customer: int | None = None) -> ExtendHold:  # type: ignore[no-untyped-def]
    return ExtendHold(held.hold_id, world.clock.now() + timedelta(seconds=seconds_from_now), customer)


async def test_an_extension_moves_the_hold_and_its_seats_once_with_hold_extended(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600, hold_max_seconds=1200)
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1", "F2")
    world.clock.advance(590)
    until = world.clock.now() + timedelta(seconds=600)
    assert await extend_hold(ExtendHold(held.hold_id, until, 7), world.deps) == until
    assert await extend_hold(ExtendHold(held.hold_id, until, 7), world.deps) == until  # idempotent
    assert await extend_hold(extend(held, 10, world, 7), world.deps) == until  # never shortened
    (event,) = world.events("HoldExtended")  # one, for the one change
    assert (event.data.holdId, event.data.expiresAt, event.bookingId) == (held.hold_id, until, held.booking_id)
    world.clock.advance(60)  # past the hold's first ten minutes
    assert (await holds.get_hold(held.hold_id, 7, world.deps)).expires_at == until
    assert world.seats(sid)["F1"] == "HELD"  # nobody else can take the seats meanwhile
    with pytest.raises(SeatsUnavailable):
        await hold(world, sid, 8, "F2")


async def test_an_extension_never_reaches_past_the_holds_creation_plus_hold_max(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600, hold_max_seconds=1200)
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    created = world.clock.now()
    assert await extend_hold(extend(held, 3600, world), world.deps) == created + timedelta(seconds=1200)
    world.clock.advance(1201)
    assert (await holds.get_hold(held.hold_id, None, world.deps)).status == "EXPIRED"


@pytest.mark.parametrize("ended", ["cancelled", "expired", "booked"])
async def test_a_hold_that_is_not_held_and_live_is_never_extended_nor_revived(fakes, ended: str) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600)
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    if ended == "cancelled":
        await holds.cancel_hold(CancelHold(held.hold_id, 7), world.deps)
    elif ended == "expired":
        world.clock.advance(601)
    else:
        async with world.deps.uow() as uow:
            await confirm_booking(ConfirmBooking(held.booking_id, uuid.uuid4(), 1200), uow)
            await uow.commit()
    with pytest.raises(HoldNotActive, match="hold the seats again"):
        await extend_hold(extend(held, 600, world), world.deps)
    assert world.events("HoldExtended") == []
    assert (await holds.get_hold(held.hold_id, None, world.deps)).status == {
        "cancelled": "RELEASED", "expired": "EXPIRED", "booked": "BOOKED"}[ended]


async def test_another_customers_or_an_unknown_hold_is_not_found(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    with pytest.raises(HoldNotFound):
        await extend_hold(extend(held, 900, world, customer=8), world.deps)
    with pytest.raises(HoldNotFound):
        await extend_hold(ExtendHold(uuid.uuid4(), world.clock.now(), None), world.deps)
    assert world.events("HoldExtended") == []


async def test_an_extended_hold_keeps_its_gate_keys_and_books_after_its_first_expiry(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600)
    sid = await world.showtime()
    held = await hold(world, sid, 7, "F1")
    await extend_hold(extend(held, 700, world), world.deps)
    world.clock.advance(650)
    assert world.admission.knows(sid, "F1") == held.hold_id  # refused by Redis, not by Postgres
    world.clock.advance(40)  # the payment's event, applied late but within the extension
    async with world.deps.uow() as uow:
        assert await confirm_booking(ConfirmBooking(held.booking_id, uuid.uuid4(), 1200), uow) == "confirmed"
        await uow.commit()


async def test_a_lost_gate_is_refilled_with_held_and_booked_seats_and_refuses_again(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600)
    sid = await world.showtime()
    held, sold = await hold(world, sid, 7, "F1"), await hold(world, sid, 8, "F2")
    async with world.deps.uow() as uow:
        await confirm_booking(ConfirmBooking(sold.booking_id, uuid.uuid4(), 1200), uow)
        await uow.commit()
    world.admission.forget()  # Redis lost everything
    with pytest.raises(SeatsUnavailable) as refused:
        await hold(world, sid, 9, "F1")  # Postgres had to say no; the gate saw its mark gone
    assert refused.value.decided_by == "postgres"  # and its own key on F1 went: the refill's stays
    for _ in range(20):
        if world.admission.knows(sid, "F2") is not None:
            break
        await asyncio.sleep(0.01)
    assert (world.admission.knows(sid, "F1"), world.admission.knows(sid, "F2")) == (held.hold_id, sold.hold_id)
    for seat in ("F1", "F2"):
        with pytest.raises(SeatsUnavailable) as refused:
            await hold(world, sid, 9, seat)
        assert refused.value.decided_by == "gate"


async def test_a_refill_keeps_newer_holds_and_drops_holds_released_meanwhile(fakes) -> None:
    world = fakes.fake_deps(hold_ttl_seconds=600)
    sid = await world.showtime()
    gone = await hold(world, sid, 7, "F1")
    world.admission.forget()
    newer = await hold(world, sid, 8, "F3")  # taken after the loss: its own key
    real = world.deps.admission.refill

    async def released_during_the_refill(*args):  # type: ignore[no-untyped-def]
        written = await real(*args)
        await holds.cancel_hold(CancelHold(gone.hold_id, 7), world.deps)  # its release found no key yet
        world.admission._keys[(sid, "F1")] = (gone.hold_id, world.clock.now() + timedelta(seconds=600))
        return written

    world.admission.refill = released_during_the_refill  # type: ignore[method-assign]
    await refill_gate(sid, world.deps)
    assert world.admission.knows(sid, "F1") is None  # the second read released it: F1 is free for the gate
    assert world.admission.knows(sid, "F3") == newer.hold_id
    assert (await hold(world, sid, 9, "F1")).status == "HELD"


async def test_a_showtime_not_on_sale_is_not_refilled(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime()
    await hold(world, sid, 7, "F1")
    world.admission.forget()
    world.clock.advance(2 * 86400)  # it started
    assert await refill_gate(sid, world.deps) is None
    assert world.admission.knows(sid, "F1") is None
