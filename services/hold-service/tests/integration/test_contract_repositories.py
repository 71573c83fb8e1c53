"""The contracts of HoldsUnitOfWork, HoldRepository and IdempotencyRepository, run against the fakes
(tests/fakes/) and the real adapters on Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hold_service.domain.hall import ShowtimeDetails, rows_hall
from hold_service.service_layer.events import booking_failed

pytestmark = pytest.mark.integration


async def held(ports, seats=("A1", "A2"), **kw):  # type: ignore[no-untyped-def]
    sid = await ports.showtime()
    request, _ = await ports.take(sid, list(seats), **kw)
    return request


# --- HoldsUnitOfWork ------------------------------------------------------------------------------

async def test_changes_are_seen_by_other_units_of_work_only_after_commit(ports) -> None:
    request = await held(ports)
    async with ports.uow() as uow:
        await uow.holds.release(request.hold_id, "CANCELLED")
        assert (await uow.holds.get(request.hold_id)).status == "RELEASED"  # its own change
        assert (await ports.get(request.hold_id)).status == "HELD"
        await uow.commit()
    assert (await ports.get(request.hold_id)).status == "RELEASED"


async def test_leaving_without_commit_discards_every_change(ports) -> None:
    request = await held(ports)
    async with ports.uow() as uow:
        await uow.holds.release(request.hold_id, "CANCELLED")
    with pytest.raises(RuntimeError):
        async with ports.uow() as uow:
            await uow.holds.emit(booking_failed(await uow.holds.get(request.hold_id), uuid.uuid4(), "HOLD_RELEASED"))
            raise RuntimeError("the handler failed")
    assert (await ports.get(request.hold_id)).status == "HELD"
    assert [e["type"] for e in await ports.events(request.booking_id)] == ["SeatsHeld"]


async def test_an_event_emitted_in_a_committed_unit_of_work_is_recorded(ports) -> None:
    request = await held(ports)
    payment = uuid.uuid4()
    async with ports.uow() as uow:
        await uow.holds.emit(booking_failed(await uow.holds.get(request.hold_id), payment, "HOLD_EXPIRED"))
        await uow.commit()
    failed = (await ports.events(request.booking_id))[-1]
    assert (failed["type"], failed["data"]) == ("BookingFailed", {"paymentId": str(payment), "reason": "HOLD_EXPIRED"})


# --- HoldRepository ---------------------------------------------------------------------------------

async def test_a_showtime_id_is_taken_once(ports) -> None:
    sid = await ports.showtime()
    async with ports.uow() as uow:
        details = ShowtimeDetails(sid, "Again", datetime(2031, 1, 1, tzinfo=UTC), {"STANDARD": {"ADULT": 100}})
        assert not await uow.holds.add_showtime(details, rows_hall({"B": 1}))
        await uow.commit()
    _, verdict = await ports.take(sid, ["B1"])
    assert verdict.found == frozenset()


async def test_get_and_lock_read_a_hold_as_customers_see_it(ports) -> None:
    request = await held(ports, ttl=0.3)
    async with ports.uow() as uow:
        assert await uow.holds.get(uuid.uuid4()) is None
        assert await uow.holds.lock_by_booking(uuid.uuid4()) is None
        hold = await uow.holds.get(request.hold_id)
        assert (hold.status, hold.booking_id, hold.customer_id, hold.seats, hold.amount_cents) == (
            "HELD", request.booking_id, request.customer_id, ["A1", "A2"], 2400)
        assert await uow.holds.lock_by_booking(request.booking_id) == hold
    await ports.elapse(0.6)
    async with ports.uow() as uow:
        assert (await uow.holds.get(request.hold_id)).status == "EXPIRED"  # lazy expiry
        assert (await uow.holds.lock_by_booking(request.booking_id)).status == "EXPIRED"


async def test_release_ends_a_held_hold_once_and_frees_its_seats(ports) -> None:
    request = await held(ports)
    async with ports.uow() as uow:
        released = await uow.holds.release(request.hold_id, "CANCELLED")
        assert await uow.holds.release(request.hold_id, "CANCELLED") is None
        await uow.commit()
    assert (released.reason, released.seats, released.freed) == ("CANCELLED", ["A1", "A2"], ["A1", "A2"])
    assert (await ports.get(request.hold_id)).status == "RELEASED"
    event = (await ports.events(request.booking_id))[-1]
    assert (event["type"], event["data"]["seats"], event["data"]["seatMapVersion"]) == (
        "SeatsReleased", ["A1", "A2"], 2)
    assert (await ports.take(request.showtime_id, ["A1", "A2"]))[1].expires_at is not None


async def test_release_of_an_expired_hold_frees_only_the_seats_it_still_has(ports) -> None:
    request = await held(ports, ttl=0.3)
    await ports.elapse(0.6)
    await ports.take(request.showtime_id, ["A2"])  # lazy expiry: A2 is someone else's now
    async with ports.uow() as uow:
        released = await uow.holds.release(request.hold_id, "CANCELLED")
        await uow.commit()
    assert (released.reason, released.freed) == ("EXPIRED", ["A1"])
    assert (await ports.get(request.hold_id)).status == "EXPIRED"
    assert [(e["data"]["seats"], e["data"]["reason"]) for e in (await ports.events(request.booking_id))[1:]] == [
        (["A2"], "EXPIRED"), (["A1"], "EXPIRED")]


async def test_sweep_ends_expired_holds_and_leaves_live_ones(ports) -> None:
    expired, live = await held(ports, ttl=0.3), await held(ports, ttl=600)
    await ports.elapse(0.6)
    swept = []
    while batch := await _sweep(ports):  # other tests' expired holds may come first
        swept += batch
    mine = [r for r in swept if r.hold_id == expired.hold_id]
    assert [(r.reason, r.freed) for r in mine] == [("EXPIRED", ["A1", "A2"])]
    assert live.hold_id not in {r.hold_id for r in swept}
    assert ((await ports.get(expired.hold_id)).status, (await ports.get(live.hold_id)).status) == ("EXPIRED", "HELD")


async def test_a_sweep_ends_many_expired_holds_in_one_batch(ports) -> None:
    first, second = await held(ports, ttl=0.3), await held(ports, ttl=0.3)
    await ports.elapse(0.6)
    async with ports.uow() as uow:
        backlog = await uow.holds.expired_backlog()
    assert backlog.holds >= 2 and backlog.oldest_seconds >= 0.3
    swept = []
    while batch := await _sweep(ports, limit=1000):
        swept += batch
    mine = {r.hold_id: (r.reason, r.freed) for r in swept if r.hold_id in (first.hold_id, second.hold_id)}
    assert mine == {first.hold_id: ("EXPIRED", ["A1", "A2"]), second.hold_id: ("EXPIRED", ["A1", "A2"])}
    for request in (first, second):
        (event,) = (await ports.events(request.booking_id))[1:]
        assert (event["type"], event["data"]["reason"], event["data"]["seatMapVersion"]) == (
            "SeatsReleased", "EXPIRED", 2)  # each showtime: SeatsHeld 1, SeatsReleased 2


async def _sweep(ports, limit: int = 1):  # type: ignore[no-untyped-def]
    async with ports.uow() as uow:
        released = await uow.holds.sweep_expired(limit)
        await uow.commit()
    return released


async def test_confirm_books_a_live_held_hold_once(ports) -> None:
    request = await held(ports)
    payment = uuid.uuid4()
    async with ports.uow() as uow:
        booked = await uow.holds.confirm(request.hold_id, payment, 2000)
        assert await uow.holds.confirm(request.hold_id, uuid.uuid4(), 2000) is False
        await uow.commit()
    hold = await ports.get(request.hold_id)
    assert (booked, hold.status, hold.payment_id) == (True, "BOOKED", payment)
    confirmed = (await ports.events(request.booking_id))[-1]
    assert (confirmed["type"], confirmed["data"]["amountCents"], confirmed["data"]["discountCents"],
            confirmed["data"]["seatMapVersion"]) == ("BookingConfirmed", 2000, 400, 2)
    async with ports.uow() as uow:
        assert await uow.holds.release(request.hold_id, "CANCELLED") is None  # booked is final


async def test_confirm_refuses_expired_and_released_holds(ports) -> None:
    expired, released = await held(ports, ttl=0.3), await held(ports)
    await ports.elapse(0.6)
    async with ports.uow() as uow:
        await uow.holds.release(released.hold_id, "CANCELLED")
        assert await uow.holds.confirm(expired.hold_id, uuid.uuid4(), 2400) is False
        assert await uow.holds.confirm(released.hold_id, uuid.uuid4(), 2400) is False
        await uow.commit()
    assert [(await ports.get(r.hold_id)).status for r in (expired, released)] == ["EXPIRED", "RELEASED"]


# --- IdempotencyRepository ----------------------------------------------------------------------------

async def test_a_key_is_claimed_once_and_keeps_its_first_outcome(ports, h) -> None:
    customer, key = h.new_id(), f"k-{uuid.uuid4()}"
    async with ports.uow() as uow:
        assert await uow.keys.claim(customer, key, "42:A1") is None
        await uow.commit()
    async with ports.uow() as uow:
        assert await uow.keys.claim(customer, key, "42:A2") == {"fingerprint": "42:A1", "outcome": None}
        await uow.keys.store(customer, key, {"unavailable": ["A1"], "decidedBy": "gate"})
        await uow.keys.store(customer, key, {"unavailable": ["A9"], "decidedBy": "postgres"})
        await uow.keys.purge(24)  # younger than the retention: kept
        await uow.commit()
    async with ports.uow() as uow:
        assert await uow.keys.claim(customer, key, "42:A1") == {
            "fingerprint": "42:A1", "outcome": {"unavailable": ["A1"], "decidedBy": "gate"}}
        assert await uow.keys.claim(customer + 1, key, "42:A1") is None  # keys are per customer
