"""A cancelled booking gives its voucher use back (service_layer/outcomes.py): RESERVED or CONFIRMED ->
RELEASED exactly once, used_count down by one with it, whatever the order of BookingConfirmed and
BookingCancelled and however often they come; in flash mode the gate gets the use back too, and a
cancellation that comes before the flash use is written stands over what was parked. Real Postgres (and
Redis and Kafka for flash mode), through the service's booking-events consumer and its inbox."""

from __future__ import annotations

import logging
import uuid

import asyncpg
import pytest
from aiokafka import ConsumerRecord
from ticketing.events import BOOKING_EVENTS, VoucherReserved, booking_event, outgoing
from ticketing_testing import eventually
from voucher_service.config import VoucherSettings
from voucher_service.domain.commands import CancelUse, ReadVoucher, ReserveVoucher, SettleUse
from voucher_service.entrypoints.consumer import booking_events_consumer
from voucher_service.service_layer import outcomes, reactions
from voucher_service.service_layer.flash_writer import write_reserved
from voucher_service.service_layer.handlers import read_voucher, reserve_voucher
from voucher_service.service_layer.ports import Deps
from voucher_testkit import assert_invariant, new_voucher, saga_event, statuses, unique_customer

pytestmark = pytest.mark.integration


def cancelled_event(payment: str, booking: str, reason: str = "SHOWTIME_CANCELLED"):  # type: ignore[no-untyped-def]
    return booking_event("BookingCancelled", source="hold-service", booking_id=booking, showtime_id=1,
                         customer_id=1, data={"holdId": uuid.uuid4(), "seats": ["A1"], "reason": reason,
                                              "paymentId": payment, "seatMapVersion": 3})


def record(event) -> ConsumerRecord:  # type: ignore[no-untyped-def,type-arg]
    value = outgoing(event).value
    return ConsumerRecord(BOOKING_EVENTS, 0, 0, 0, 0, str(event.bookingId).encode(), value, None, 0, len(value), ())


def consumer(deps: Deps, pool: asyncpg.Pool):  # type: ignore[no-untyped-def]
    return booking_events_consumer(VoucherSettings(_env_file=None), pool, deps)  # type: ignore[call-arg]


async def cancelled_at(pool: asyncpg.Pool, order: str) -> object:
    return await pool.fetchval("SELECT cancelled_at FROM voucher_redemption WHERE order_id = $1", order)


async def test_a_cancelled_booking_gives_its_confirmed_use_back_once(deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(deps, limit=1)
    customer, payment, booking = unique_customer(), str(uuid.uuid4()), str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, customer, payment, 1000), deps)
    inbox = consumer(deps, pool).inbox
    assert await inbox.apply(record(saga_event("BookingConfirmed", payment, booking))) == "applied"
    assert await statuses(pool, [payment]) == {payment: "CONFIRMED"} and await assert_invariant(pool, code) == 1
    cancel = record(cancelled_event(payment, booking))
    answers = [await inbox.apply(cancel), await inbox.apply(cancel),
               await inbox.apply(record(cancelled_event(payment, booking, "CUSTOMER")))]  # another cancellation
    assert answers == ["applied", "duplicate", "applied"]
    assert await statuses(pool, [payment]) == {payment: "RELEASED"} and await cancelled_at(pool, payment)
    assert await assert_invariant(pool, code) == 0  # used_count = live uses: given back once
    counters = await read_voucher(ReadVoucher(code), deps)
    assert (counters.voucher.used_count, counters.confirmed, counters.released) == (0, 0, 1)
    # The use is the voucher's again (limit 1), and the customer's slot is free: he may use it again.
    again = str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, customer, again, 1000), deps)
    assert await assert_invariant(pool, code) == 1


async def test_a_cancellation_that_overtakes_the_confirmation_is_not_undone_by_it(
        deps: Deps, pool: asyncpg.Pool, caplog: pytest.LogCaptureFixture) -> None:
    code = await new_voucher(deps, limit=3)
    payment, booking = str(uuid.uuid4()), str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, unique_customer(), payment, 1000), deps)
    inbox = consumer(deps, pool).inbox
    await inbox.apply(record(cancelled_event(payment, booking)))
    with caplog.at_level(logging.INFO):
        await inbox.apply(record(saga_event("BookingConfirmed", payment, booking)))
        await inbox.apply(record(saga_event("PaymentFailed", payment, booking)))
    assert await statuses(pool, [payment]) == {payment: "RELEASED"}
    assert await assert_invariant(pool, code) == 0
    actions = {getattr(r, "action", None) for r in caplog.records}
    assert "voucher.confirm_after_cancellation" in actions and "voucher.confirm_after_release" not in actions


async def test_a_booking_without_a_voucher_is_cancelled_without_effect(deps: Deps, pool: asyncpg.Pool) -> None:
    payment = str(uuid.uuid4())
    assert not await outcomes.cancel_use(CancelUse(payment), deps)
    assert await statuses(pool, [payment]) == {}
    await pool.execute("DELETE FROM voucher_order_outcome WHERE order_id = $1", payment)


async def test_a_cancellation_before_the_flash_use_is_written_stands_over_a_parked_confirmation(
        deps: Deps, pool: asyncpg.Pool) -> None:
    """The writer lags: BookingConfirmed, then BookingCancelled, both before VoucherReserved lands. The
    cancellation replaces the parked confirmation, and the writer lands the use as a cancelled tombstone that
    never counts."""
    code = await new_voucher(deps, limit=2, flash=True)
    payment, customer = str(uuid.uuid4()), unique_customer()
    assert not await reactions.settle_use(SettleUse(payment, "CONFIRMED"), deps)  # parked
    assert not await outcomes.cancel_use(CancelUse(payment), deps)  # parked over it
    assert not await reactions.settle_use(SettleUse(payment, "CONFIRMED"), deps)  # a late copy: CANCELLED stands
    await write_reserved(VoucherReserved.new(code=code, customer_id=customer, order_id=payment, order_amount=1000),
                         deps)
    assert await statuses(pool, [payment]) == {payment: "RELEASED"} and await cancelled_at(pool, payment)
    assert await assert_invariant(pool, code) == 0


async def test_a_cancelled_flash_use_goes_back_to_the_gate(flash_deps: Deps, pool: asyncpg.Pool) -> None:
    code = await new_voucher(flash_deps, limit=5, flash=True)
    payment, booking = str(uuid.uuid4()), str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, unique_customer(), payment, 1000), flash_deps)

    async def written() -> bool:
        return await statuses(pool, [payment]) == {payment: "RESERVED"}
    await eventually(written, timeout=30)
    inbox = consumer(flash_deps, pool).inbox
    await inbox.apply(record(saga_event("BookingConfirmed", payment, booking)))
    assert await flash_deps.gate.remaining(code) == 4
    await inbox.apply(record(cancelled_event(payment, booking)))
    await inbox.apply(record(cancelled_event(payment, booking, "CUSTOMER")))
    assert await flash_deps.gate.remaining(code) == 5
    assert await statuses(pool, [payment]) == {payment: "RELEASED"}
    assert await assert_invariant(pool, code) == 0
