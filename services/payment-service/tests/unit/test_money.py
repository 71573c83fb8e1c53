"""The money reconciler on the fakes: pending payments settled, refunds retried with backoff, the report."""

from __future__ import annotations

import pytest
from payment_service.domain.commands import EndPaymentOfReleasedHold, RefundFailedBooking, StartCheckout
from payment_service.domain.errors import DependencyUnavailable, HoldNotActive
from payment_service.service_layer import money, reactions
from payment_service.service_layer.checkout import start_checkout


async def started(world, customer: int = 7):  # type: ignore[no-untyped-def]
    hold = world.holds.add(customer, amount=2400)
    return await start_checkout(StartCheckout(hold.hold_id, customer, "k1", None), world.deps)


async def refund_due(world):  # type: ignore[no-untyped-def]
    """A paid payment whose booking failed: money due back."""
    payment = await started(world)
    world.gateway.pay(payment.session_id)
    async with world.deps.uow() as uow:
        await uow.payments.settle(payment.payment_id, "SUCCEEDED")
        await reactions.refund_failed_booking(RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"), uow)
        await uow.commit()
    return payment


def status(world, payment) -> str:  # type: ignore[no-untyped-def]
    return str(world.row(payment.payment_id).payment.status)


async def test_pending_payments_whose_callback_never_came_are_settled_from_the_gateway(kit) -> None:
    world = kit.fakes.fake_deps(reconcile_after_seconds=60)
    paid, declined, still_open = [await started(world, c) for c in (1, 2, 3)]
    world.gateway.pay(paid.session_id)
    world.gateway.pay(declined.session_id, "failed")
    assert await money.settle_pending(world.deps) == 0  # younger than RECONCILE_AFTER_SECONDS
    world.clock.advance(61)
    assert await money.settle_pending(world.deps) == 2
    assert [status(world, p) for p in (paid, declined, still_open)] == ["SUCCEEDED", "FAILED", "PENDING"]
    assert [e.type for e in world.events(paid.payment_id)] == ["CheckoutStarted", "PaymentSucceeded"]


async def test_a_payment_that_never_got_a_session_expires_once_its_time_is_over(kit) -> None:
    world = kit.fakes.fake_deps(reconcile_after_seconds=60, payment_session_ttl_seconds=480)
    hold = world.holds.add(7)
    world.gateway.failing.add("create_session")
    try:
        await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)
    except ConnectionError:
        pass  # the customer never got a URL
    world.clock.advance(61)
    assert await money.settle_pending(world.deps) == 0  # someone might still retry the checkout
    world.clock.advance(480)
    assert await money.settle_pending(world.deps) == 1
    (row,) = world.db.committed("payments")
    assert row.payment.status == "EXPIRED" and world.events()[-1].data.reason == "EXPIRED"


async def test_a_payment_without_a_session_whose_hold_ended_expires_at_the_next_pass(kit) -> None:
    """The checkout died between its PENDING row and the gateway (the customer got a 503 or no answer) and the
    hold ended: nothing is left to wait for, so the payment and its voucher use end now, not at the session's end."""
    world = kit.fakes.fake_deps(reconcile_after_seconds=900, payment_session_ttl_seconds=480)
    hold = world.holds.add(7)
    world.gateway.failing.add("create_session")
    with pytest.raises(ConnectionError):
        await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)
    async with world.deps.uow() as uow:
        await reactions.end_payment_of_released_hold(EndPaymentOfReleasedHold(hold.hold_id), uow, world.gateway)
        await uow.commit()
    world.clock.advance(1)
    assert await money.settle_pending(world.deps) == 1
    (row,) = world.db.committed("payments")
    assert row.payment.status == "EXPIRED" and world.events()[-1].data.reason == "EXPIRED"
    world.gateway.failing.clear()
    with pytest.raises(HoldNotActive):  # the customer's retry with the same key opens no session
        await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)
    assert world.gateway.sessions == {}


async def test_a_session_the_gateway_forgot_expires_only_once_its_time_is_over(kit) -> None:
    world = kit.fakes.fake_deps(reconcile_after_seconds=60, payment_session_ttl_seconds=480)
    payment = await started(world)
    world.gateway.forget()
    world.clock.advance(61)
    assert await money.settle_pending(world.deps) == 0
    world.clock.advance(480)
    assert await money.settle_pending(world.deps) == 1 and status(world, payment) == "EXPIRED"


async def test_a_cancel_requested_is_done_at_once_whatever_the_age(kit) -> None:
    world = kit.fakes.fake_deps(reconcile_after_seconds=3600)
    payment = await started(world)
    async with world.deps.uow() as uow:
        await uow.payments.request_cancel(payment.payment_id)  # SeatsReleased when the gateway was down
        await uow.commit()
    assert await money.settle_pending(world.deps) == 1
    assert status(world, payment) == "EXPIRED" and world.gateway.sessions[payment.session_id].status == "expired"


async def test_a_gateway_that_is_down_stops_the_pass_settles_nothing_and_fails_the_run(kit) -> None:
    world = kit.fakes.fake_deps(reconcile_after_seconds=0)
    owed, payment = await refund_due(world), await started(world, 8)
    world.gateway.pay(payment.session_id)
    world.clock.advance(1)
    world.gateway.failing.add("get_session")
    with pytest.raises(DependencyUnavailable):  # the job's metrics count a failed run (job_metrics)
        await money.settle_pending(world.deps)
    assert status(world, payment) == "PENDING"
    with pytest.raises(DependencyUnavailable):
        await money.reconcile(world.deps)
    assert status(world, owed) == "REFUNDED"  # the refunds and the report still ran


async def test_a_pending_payment_is_settled_at_the_first_pass_after_its_session_ended(kit) -> None:
    """However long RECONCILE_AFTER_SECONDS: its hold outlives the session only by the grace."""
    world = kit.fakes.fake_deps(reconcile_after_seconds=900, payment_session_ttl_seconds=480)
    paid, unpaid = await started(world, 1), await started(world, 2)
    world.gateway.pay(paid.session_id)  # at the last moment; the callback is lost
    world.clock.advance(479)
    assert await money.settle_pending(world.deps) == 0  # the session is still open
    world.clock.advance(1)
    assert await money.settle_pending(world.deps) == 2
    assert [status(world, p) for p in (paid, unpaid)] == ["SUCCEEDED", "EXPIRED"]
    assert [e.type for e in world.events(paid.payment_id)] == ["CheckoutStarted", "PaymentSucceeded"]


async def test_money_due_back_is_refunded_once_with_refund_issued(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await refund_due(world)
    assert await money.issue_refunds(world.deps) == 1
    assert await money.issue_refunds(world.deps) == 0
    row = world.row(payment.payment_id)
    (refund_id,) = world.gateway.sessions[payment.session_id].refunds.values()
    assert (row.payment.status, row.payment.refund_id) == ("REFUNDED", refund_id)
    issued = world.events(payment.payment_id)[-1]
    assert (issued.type, issued.data.refundId, issued.data.amountCents) == ("RefundIssued", refund_id, 2400)


@pytest.mark.parametrize("switch", ["failing", "refusing"])
async def test_a_refused_refund_is_retried_with_backoff_until_the_gateway_takes_it(kit, switch: str) -> None:
    world = kit.fakes.fake_deps(refund_retry_first_seconds=2, refund_retry_max_seconds=5)
    payment = await refund_due(world)
    getattr(world.gateway, switch).add("refund")  # down (503) or refusing (409): retried alike
    waits = []
    for _ in range(3):
        assert await money.issue_refunds(world.deps) == 0
        row = world.row(payment.payment_id)
        waits.append((row.refund_next_at - world.clock.now()).total_seconds())
        world.clock.advance(waits[-1] - 0.5)
        assert await money.issue_refunds(world.deps) == 0  # not before its time
        world.clock.advance(0.5)
    assert waits == [2, 4, 5] and world.row(payment.payment_id).refund_last_error.startswith("gateway")
    getattr(world.gateway, switch).clear()
    assert await money.issue_refunds(world.deps) == 1
    row = world.row(payment.payment_id)
    assert (row.payment.status, row.payment.refund_attempts, row.refund_last_error) == ("REFUNDED", 3, None)


async def test_a_refund_leased_by_a_reconciler_that_died_is_taken_again_and_refunded_once(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await refund_due(world)
    async with world.deps.uow() as uow:
        (leased,) = await uow.payments.claim_refunds(10, money.REFUND_LEASE_SECONDS)
        await uow.commit()
    await world.gateway.refund(leased.session_id, leased.payment_id, leased.amount_cents)  # then it died
    assert await money.issue_refunds(world.deps) == 0  # leased
    world.clock.advance(money.REFUND_LEASE_SECONDS)
    assert await money.issue_refunds(world.deps) == 1
    assert status(world, payment) == "REFUNDED" and len(world.gateway.sessions[payment.session_id].refunds) == 1


async def test_the_report_counts_money_neither_booked_nor_refunded_in_time(kit) -> None:
    world = kit.fakes.fake_deps(refund_alert_seconds=900)
    world.gateway.failing.add("refund")
    owed = await refund_due(world)
    unbooked = await started(world, customer=8)
    world.gateway.pay(unbooked.session_id)
    async with world.deps.uow() as uow:
        await uow.payments.settle(unbooked.payment_id, "SUCCEEDED")
        await uow.commit()
    assert (await money.reconcile(world.deps)).refunds_overdue == 0
    world.clock.advance(901)
    report = await money.reconcile(world.deps)
    assert (report.refunds_pending, report.refunds_overdue, report.paid_unbooked) == (1, 1, 1)
    assert report.oldest_refund_due == world.row(owed.payment_id).refund_due_since
