"""BookingCancelled on the fakes: the cancelled booking's payment is refunded in full exactly once, by the
money reconciler, whatever the order and number of the events and however often the gateway refuses first."""

from __future__ import annotations

import logging

import pytest
from payment_service.domain.commands import RecordBooking, RefundCancelledBooking, RefundFailedBooking, StartCheckout
from payment_service.service_layer import money, reactions
from payment_service.service_layer.checkout import start_checkout

from .test_reactions import consume, started


def refunds(world, payment) -> list[int]:  # type: ignore[no-untyped-def]
    return [e.data.amountCents for e in world.events(payment.payment_id) if e.type == "RefundIssued"]


def cancelled(payment, reason: str = "SHOWTIME_CANCELLED") -> RefundCancelledBooking:  # type: ignore[no-untyped-def]
    return RefundCancelledBooking(payment.payment_id, reason)


@pytest.mark.parametrize(("reason", "refund_reason"), [("CUSTOMER", "CUSTOMER_CANCELLED"),
                                                       ("SHOWTIME_CANCELLED", "SHOWTIME_CANCELLED")])
async def test_a_cancelled_booking_is_refunded_in_full_once(kit, reason: str, refund_reason: str) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.record_booking, RecordBooking(payment.payment_id))
    await consume(world, reactions.refund_cancelled_booking, cancelled(payment, reason))
    assert world.row(payment.payment_id).payment.refund_reason == refund_reason
    assert await money.issue_refunds(world.deps) == 1
    assert await money.issue_refunds(world.deps) == 0
    row = world.row(payment.payment_id)
    assert (row.payment.status, row.booking_confirmed_at is not None) == ("REFUNDED", True)
    assert refunds(world, payment) == [payment.amount_cents] == [2400]
    assert list(world.gateway.sessions[payment.session_id].refunds) == [str(payment.payment_id)]


async def test_repeated_cancellations_make_one_refund(kit) -> None:
    """The same event redelivered is the inbox's; these are other events (a customer's cancel racing the
    showtime's): the first makes the refund due, the others change nothing, before or after the refund."""
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.record_booking, RecordBooking(payment.payment_id))
    await consume(world, reactions.refund_cancelled_booking, cancelled(payment, "CUSTOMER"))
    due_since = world.row(payment.payment_id).refund_due_since
    world.clock.advance(3)
    await consume(world, reactions.refund_cancelled_booking, cancelled(payment))
    assert (world.row(payment.payment_id).payment.refund_reason,
            world.row(payment.payment_id).refund_due_since) == ("CUSTOMER_CANCELLED", due_since)
    await money.issue_refunds(world.deps)
    await consume(world, reactions.refund_cancelled_booking, cancelled(payment))
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"))
    assert await money.issue_refunds(world.deps) == 0
    assert refunds(world, payment) == [2400]


async def test_a_cancellation_before_its_booking_s_confirmation_is_refunded_and_then_recorded_booked(
        kit, caplog: pytest.LogCaptureFixture) -> None:
    """BookingConfirmed (hold-service) and BookingCancelled come in no promised order here: the refund is due
    from the cancellation, and the late confirmation is recorded without an alarm, before or after the
    refund went through."""
    for refund_first in (False, True):
        world = kit.fakes.fake_deps()
        payment = await started(world, paid=True)
        await consume(world, reactions.refund_cancelled_booking, cancelled(payment))
        if refund_first:
            assert await money.issue_refunds(world.deps) == 1
        with caplog.at_level(logging.ERROR):
            await consume(world, reactions.record_booking, RecordBooking(payment.payment_id))
        assert not [r for r in caplog.records if getattr(r, "action", "") == "payment.booked_but_refunded"]
        await money.issue_refunds(world.deps)
        row = world.row(payment.payment_id)
        assert (row.payment.status, row.booking_confirmed_at is not None) == ("REFUNDED", True)
        assert refunds(world, payment) == [2400]


async def test_refunds_the_gateway_refuses_at_first_end_refunded_by_the_reconciler(kit) -> None:
    world = kit.fakes.fake_deps(refund_retry_first_seconds=2, refund_retry_max_seconds=300)
    payments = [await started(world, paid=True)]
    for customer in (8, 9):
        hold = world.holds.add(customer, amount=1800)
        p = await start_checkout(StartCheckout(hold.hold_id, customer, "k", None), world.deps)
        world.gateway.pay(p.session_id)
        async with world.deps.uow() as uow:
            await uow.payments.settle(p.payment_id, "SUCCEEDED")
            await uow.commit()
        payments.append(p)
    for p in payments:
        await consume(world, reactions.record_booking, RecordBooking(p.payment_id))
        await consume(world, reactions.refund_cancelled_booking, cancelled(p))
    world.gateway.refusing.add("refund")
    assert await money.issue_refunds(world.deps) == 0
    world.clock.advance(2)
    assert await money.issue_refunds(world.deps) == 0  # refused again: the backoff doubles
    assert {world.row(p.payment_id).payment.refund_attempts for p in payments} == {2}
    world.gateway.refusing.clear()
    world.clock.advance(3)
    assert await money.issue_refunds(world.deps) == 0  # not due yet (4 s after the second refusal)
    world.clock.advance(1)
    assert await money.issue_refunds(world.deps) == 3
    assert [refunds(world, p) for p in payments] == [[2400], [1800], [1800]]
    assert {world.row(p.payment_id).payment.status for p in payments} == {"REFUNDED"}
    found = await money.report_unresolved(world.deps)
    assert (found.refunds_pending, found.paid_unbooked) == (0, 0)


async def test_a_cancellation_of_a_payment_not_paid_here_refunds_nothing_and_alarms(
        kit, caplog: pytest.LogCaptureFixture) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    with caplog.at_level(logging.ERROR):
        await consume(world, reactions.refund_cancelled_booking, cancelled(payment))
    assert world.row(payment.payment_id).payment.refund_reason is None
    assert [r for r in caplog.records if getattr(r, "action", "") == "refund.cancelled_but_unpaid"]
