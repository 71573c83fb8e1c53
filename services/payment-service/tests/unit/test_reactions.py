"""Reactions to hold-service's events on the fakes, each in a unit of work committed afterwards (as the
idempotent consumer runs them)."""

from __future__ import annotations

from payment_service.domain.commands import (
    EndPaymentOfReleasedHold,
    RecordBooking,
    RefundFailedBooking,
    StartCheckout,
)
from payment_service.service_layer import reactions
from payment_service.service_layer.checkout import start_checkout


async def started(world, paid: bool = False):  # type: ignore[no-untyped-def]
    hold = world.holds.add(7, amount=2400)
    payment = await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)
    if paid:
        world.gateway.pay(payment.session_id)
        async with world.deps.uow() as uow:
            await uow.payments.settle(payment.payment_id, "SUCCEEDED")
            await uow.commit()
    return payment


async def consume(world, reaction, cmd) -> None:  # type: ignore[no-untyped-def]
    async with world.deps.uow() as uow:
        if reaction is reactions.end_payment_of_released_hold:
            await reaction(cmd, uow, world.deps.gateway)
        else:
            await reaction(cmd, uow)
        await uow.commit()


async def test_booking_failed_makes_the_refund_due_once(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"))
    due_since = world.row(payment.payment_id).refund_due_since
    world.clock.advance(5)
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_RELEASED"))
    row = world.row(payment.payment_id)
    assert (row.payment.refund_reason, row.refund_due_since) == ("HOLD_EXPIRED", due_since)


async def test_booking_failed_for_an_unpaid_payment_owes_nothing(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"))
    assert world.row(payment.payment_id).payment.refund_reason is None


async def test_booking_confirmed_is_final_and_never_refunded(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.record_booking, RecordBooking(payment.payment_id))
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"))
    row = world.row(payment.payment_id)
    assert row.booking_confirmed_at == world.clock.now() and row.payment.refund_reason is None


async def test_a_booking_for_money_already_due_back_does_not_book_it(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.refund_failed_booking, RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"))
    await consume(world, reactions.record_booking, RecordBooking(payment.payment_id))
    row = world.row(payment.payment_id)
    assert row.booking_confirmed_at is None and row.payment.refund_reason == "HOLD_EXPIRED"


async def test_a_released_hold_cancels_its_open_session(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    assert world.row(payment.payment_id).payment.status == "EXPIRED"
    assert world.gateway.sessions[payment.session_id].status == "expired"
    assert [(e.type, getattr(e.data, "reason", None)) for e in world.events(payment.payment_id)] == [
        ("CheckoutStarted", None), ("PaymentFailed", "EXPIRED")]


async def test_a_released_hold_paid_a_moment_earlier_is_settled_paid(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.pay(payment.session_id)
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    assert world.row(payment.payment_id).payment.status == "SUCCEEDED"  # BookingFailed then makes it due back
    assert [e.type for e in world.events(payment.payment_id)] == ["CheckoutStarted", "PaymentSucceeded"]


async def test_a_cancel_the_gateway_refuses_is_settled_from_the_sessions_state(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.pay(payment.session_id, "failed")
    world.gateway.refusing.add("cancel_session")  # a gateway that will not cancel a decided session
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    assert world.row(payment.payment_id).payment.status == "FAILED"
    assert [e.data.reason for e in world.events(payment.payment_id)[1:]] == ["DECLINED"]


async def test_a_released_hold_whose_checkout_has_no_session_yet_asks_for_a_cancel(kit) -> None:
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7)
    world.gateway.down = True
    try:
        await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)
    except ConnectionError:
        pass  # the checkout died between its PENDING row and the gateway
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(hold.hold_id))
    (row,) = world.db.committed("payments")
    assert row.payment.status == "PENDING" and row.cancel_requested_at == world.clock.now()
    async with world.deps.uow() as uow:  # the reconciler sees it at once, not after RECONCILE_AFTER_SECONDS
        (pending,) = await uow.payments.pending_to_reconcile(after_seconds=10**6)
    assert pending.cancel_requested


async def test_a_released_hold_while_the_gateway_is_down_is_left_to_the_reconciler(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.down = True
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    row = world.row(payment.payment_id)
    assert row.payment.status == "PENDING" and row.cancel_requested_at is not None


async def test_a_released_hold_whose_session_the_gateway_forgot_is_left_to_the_reconciler(kit) -> None:
    """A restarted gateway (the in-memory simulator) no longer knows the session: nothing can be paid
    there, and the reconciler expires the payment once its time is over; the event must not fail."""
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.forget()
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    row = world.row(payment.payment_id)
    assert row.payment.status == "PENDING" and row.cancel_requested_at is not None


async def test_a_released_hold_without_a_pending_payment_changes_nothing(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world, paid=True)
    await consume(world, reactions.end_payment_of_released_hold, EndPaymentOfReleasedHold(payment.hold_id))
    row = world.row(payment.payment_id)
    assert row.payment.status == "SUCCEEDED" and row.cancel_requested_at is None
    assert world.gateway.sessions[payment.session_id].status == "paid"
