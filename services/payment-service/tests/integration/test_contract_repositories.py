"""The contracts of PaymentsUnitOfWork, PaymentRepository, IdempotencyRepository and CallbackEventRepository,
run against the fakes (tests/fakes/) and the real adapters on Postgres. Counts the real database holds
for every test (unresolved money, refunds due) are compared before and after, never as absolutes."""

from __future__ import annotations

import uuid

import pytest
from payment_service.service_layer.checkout import checkout_started

pytestmark = pytest.mark.integration


async def paid(ports, **kw):  # type: ignore[no-untyped-def]
    payment = await ports.add(ports.payment(**kw))
    return await ports.change(lambda uow: uow.payments.settle(payment.payment_id, "SUCCEEDED"))


# --- PaymentsUnitOfWork ---------------------------------------------------------------------------

async def test_changes_are_seen_by_other_units_of_work_only_after_commit(ports) -> None:
    payment = await ports.add()
    async with ports.uow() as uow:
        assert (await uow.payments.settle(payment.payment_id, "FAILED")).status == "FAILED"
        assert (await uow.payments.get(payment.payment_id)).status == "FAILED"
        assert (await ports.get(payment.payment_id)).status == "PENDING"
        await uow.commit()
    assert (await ports.get(payment.payment_id)).status == "FAILED"


async def test_leaving_without_commit_discards_changes_and_events(ports) -> None:
    payment = await ports.add()
    async with ports.uow() as uow:
        await uow.payments.settle(payment.payment_id, "FAILED")
        await uow.publish(checkout_started(payment))
    assert (await ports.get(payment.payment_id)).status == "PENDING"
    assert await ports.events(payment.booking_id) == []


async def test_published_events_are_recorded_with_the_commit(ports) -> None:
    payment = await ports.add()
    await ports.change(lambda uow: uow.publish(checkout_started(payment)))
    (started,) = await ports.events(payment.booking_id)
    assert (started["type"], started["data"]["paymentId"], started["data"]["amountCents"]) == (
        "CheckoutStarted", str(payment.payment_id), 2400)


# --- PaymentRepository ----------------------------------------------------------------------------

async def test_a_payment_is_added_once_with_the_end_of_its_session(ports) -> None:
    draft = ports.payment(ttl=480)
    added = await ports.add(draft)
    assert (added.status, added.expires_at) == ("PENDING", draft.expires_at)  # the checkout's window decides
    assert await ports.add(draft) == added  # a retry with the same id changes nothing


async def test_a_hold_gets_at_most_max_attempts_payments(ports) -> None:
    first = await ports.add()
    for _ in range(2):  # declined, then checked out again
        await ports.change(lambda uow, p=first: uow.payments.settle(p.payment_id, "FAILED"))
        first = await ports.add(ports.payment(hold_id=first.hold_id), max_attempts=3)
    await ports.change(lambda uow: uow.payments.settle(first.payment_id, "FAILED"))
    fourth = ports.payment(hold_id=first.hold_id)
    await ports.change(lambda uow: uow.payments.add(fourth, "k4", 3))
    assert await ports.get(fourth.payment_id) is None
    async with ports.uow() as uow:
        assert [p.status for p in await uow.payments.of_hold(first.hold_id)] == ["FAILED"] * 3


async def test_a_hold_has_one_live_payment_at_a_time(ports) -> None:
    first = await ports.add()
    second = ports.payment(hold_id=first.hold_id)
    await ports.change(lambda uow: uow.payments.add(second, "k2", 3))
    assert await ports.get(second.payment_id) is None
    await ports.change(lambda uow: uow.payments.settle(first.payment_id, "FAILED"))
    third = await ports.add(ports.payment(hold_id=first.hold_id))
    async with ports.uow() as uow:
        assert [p.payment_id for p in await uow.payments.of_hold(first.hold_id)] == [first.payment_id,
                                                                                    third.payment_id]
        assert (await uow.payments.lock_pending_of_hold(first.hold_id)).payment_id == third.payment_id
        assert await uow.payments.lock_pending_of_hold(uuid.uuid4()) is None


async def test_a_session_is_attached_once_and_says_whether_a_cancel_came_first(ports) -> None:
    plain, cancelled = await ports.add(), await ports.add()
    first = f"cs_{uuid.uuid4()}"
    assert await ports.change(lambda uow: uow.payments.attach_session(plain.payment_id, first, "u")) is False
    assert await ports.change(lambda uow: uow.payments.attach_session(plain.payment_id, "cs_other", "u")) is None
    assert await ports.change(lambda uow: uow.payments.request_cancel(cancelled.payment_id)) == (True, None)
    session = f"cs_{uuid.uuid4()}"
    assert await ports.change(lambda uow: uow.payments.attach_session(cancelled.payment_id, session, "u")) is True
    assert await ports.change(lambda uow: uow.payments.request_cancel(cancelled.payment_id)) == (True, session)
    stored = await ports.get(cancelled.payment_id)
    assert (stored.session_id, stored.redirect_url) == (session, "u")


async def test_a_payment_is_settled_once_and_cancels_stop_with_it(ports) -> None:
    payment = await ports.add()
    settled = await ports.change(lambda uow: uow.payments.settle(payment.payment_id, "EXPIRED"))
    assert settled.status == "EXPIRED"
    assert await ports.change(lambda uow: uow.payments.settle(payment.payment_id, "SUCCEEDED")) is None
    assert await ports.change(lambda uow: uow.payments.request_cancel(payment.payment_id)) == (False, None)


async def test_money_taken_after_settlement_is_due_back_once(ports) -> None:
    failed, succeeded = await ports.add(), await paid(ports)
    await ports.change(lambda uow: uow.payments.settle(failed.payment_id, "FAILED"))
    due = await ports.change(lambda uow: uow.payments.paid_after_settlement(failed.payment_id))
    assert (due.status, due.refund_reason) == ("FAILED", "PAID_AFTER_SETTLEMENT")
    assert await ports.change(lambda uow: uow.payments.paid_after_settlement(failed.payment_id)) is None
    assert await ports.change(lambda uow: uow.payments.paid_after_settlement(succeeded.payment_id)) is None


async def test_a_paid_payment_is_either_booked_or_refunded(ports) -> None:
    booked, refunded = await paid(ports), await paid(ports)
    assert (await ports.change(lambda uow: uow.payments.booking_confirmed(booked.payment_id))) is not None
    assert await ports.change(lambda uow: uow.payments.booking_confirmed(booked.payment_id)) is None
    assert await ports.change(lambda uow: uow.payments.refund_due(booked.payment_id, "HOLD_EXPIRED")) is None
    due = await ports.change(lambda uow: uow.payments.refund_due(refunded.payment_id, "HOLD_RELEASED"))
    assert due.refund_reason == "HOLD_RELEASED"
    assert await ports.change(lambda uow: uow.payments.refund_due(refunded.payment_id, "HOLD_EXPIRED")) is None
    assert await ports.change(lambda uow: uow.payments.booking_confirmed(refunded.payment_id)) is None
    unpaid = await ports.add()
    assert await ports.change(lambda uow: uow.payments.refund_due(unpaid.payment_id, "HOLD_EXPIRED")) is None


async def test_a_cancelled_booking_s_payment_owes_its_whole_amount_once_in_either_order(ports) -> None:
    """BookingCancelled after the booking was recorded, or before its BookingConfirmed: due once, and the
    booking is recorded either way; a failed booking's refund is not a cancellation's."""
    booked_first, cancelled_first, failed = await paid(ports), await paid(ports), await paid(ports)
    await ports.change(lambda uow: uow.payments.booking_confirmed(booked_first.payment_id))
    for payment in (booked_first, cancelled_first):
        due = await ports.change(lambda uow, p=payment: uow.payments.refund_cancelled(p.payment_id,
                                                                                      "SHOWTIME_CANCELLED"))
        assert (due.status, due.refund_reason, due.amount_cents) == ("SUCCEEDED", "SHOWTIME_CANCELLED", 2400)
        again = await ports.change(lambda uow, p=payment: uow.payments.refund_cancelled(p.payment_id,
                                                                                        "CUSTOMER_CANCELLED"))
        assert again is None
    await ports.change(lambda uow: uow.payments.mark_refunded(cancelled_first.payment_id, "re_1"))
    late = await ports.change(lambda uow: uow.payments.booking_confirmed(cancelled_first.payment_id))
    assert (late.status, late.refund_reason) == ("REFUNDED", "SHOWTIME_CANCELLED")
    await ports.change(lambda uow: uow.payments.refund_due(failed.payment_id, "HOLD_EXPIRED"))
    owed = await ports.change(lambda uow: uow.payments.refund_cancelled(failed.payment_id, "SHOWTIME_CANCELLED"))
    assert owed is None
    assert await ports.change(lambda uow: uow.payments.booking_confirmed(failed.payment_id)) is None
    unpaid = await ports.add()
    owed = await ports.change(lambda uow: uow.payments.refund_cancelled(unpaid.payment_id, "SHOWTIME_CANCELLED"))
    assert owed is None


async def test_refunds_are_leased_retried_later_and_marked_once(ports) -> None:
    """Each claim shares its unit of work with the step before it: a reconciler running beside the tests (the
    e2e stack's worker, on the same database) must not take this refund between the two."""
    payment = await paid(ports)

    async def due_then_claimed(uow):  # type: ignore[no-untyped-def]
        await uow.payments.refund_due(payment.payment_id, "HOLD_EXPIRED")
        return await _claimed(uow)

    assert payment.payment_id in await ports.change(due_then_claimed)
    assert payment.payment_id not in await ports.change(_claimed)  # leased
    later, now = await _failed_then_claimed(ports, payment, 60), await _failed_then_claimed(ports, payment, 0)
    assert payment.payment_id not in later and payment.payment_id in now
    assert (await ports.get(payment.payment_id)).refund_attempts == 2
    refunded = await ports.change(lambda uow: uow.payments.mark_refunded(payment.payment_id, "re_1"))
    assert (refunded.status, refunded.refund_id, refunded.refund_attempts) == ("REFUNDED", "re_1", 2)
    assert await ports.change(lambda uow: uow.payments.mark_refunded(payment.payment_id, "re_2")) is None
    assert payment.payment_id not in await ports.change(_claimed)


async def _claimed(uow) -> set[uuid.UUID]:  # type: ignore[no-untyped-def]
    return {p.payment_id for p in await uow.payments.claim_refunds(10_000, 60)}


async def _failed_then_claimed(ports, payment, retry_in: float) -> set[uuid.UUID]:  # type: ignore[no-untyped-def]
    async def step(uow):  # type: ignore[no-untyped-def]
        await uow.payments.refund_failed(payment.payment_id, retry_in, "gateway: HTTP 502")
        return await _claimed(uow)
    return await ports.change(step)  # type: ignore[no-any-return]


async def test_the_reconciler_sees_old_and_cancel_requested_pending_payments(ports) -> None:
    old, cancelled, plain = await ports.add(ports.payment(ttl=60)), await ports.add(), await ports.add()
    await ports.change(lambda uow: uow.payments.request_cancel(cancelled.payment_id))
    await ports.elapse(0.6)
    async with ports.uow() as uow:
        recent = {p.payment.payment_id: p for p in await uow.payments.pending_to_reconcile(0.5, limit=100_000)}
        at_once = {p.payment.payment_id for p in await uow.payments.pending_to_reconcile(10**6, limit=100_000)}
    assert not recent[old.payment_id].past and not recent[old.payment_id].cancel_requested
    assert recent[cancelled.payment_id].cancel_requested and not recent[cancelled.payment_id].past
    assert cancelled.payment_id in at_once and old.payment_id not in at_once and plain.payment_id not in at_once


async def test_the_reconciler_sees_a_pending_payment_as_soon_as_its_session_ended(ports) -> None:
    ended, open_ = await ports.add(ports.payment(ttl=0.3)), await ports.add(ports.payment(ttl=600))
    await ports.elapse(0.6)
    async with ports.uow() as uow:  # however long RECONCILE_AFTER_SECONDS
        found = {p.payment.payment_id: p for p in await uow.payments.pending_to_reconcile(10**6, limit=100_000)}
    assert found[ended.payment_id].past and open_.payment_id not in found


async def test_the_report_counts_money_neither_booked_nor_refunded_in_time(ports) -> None:
    await ports.elapse(0.1)  # what earlier tests left is past the 0.05 s bound already
    before, before_within_an_hour = await _report(ports), await _report(ports, bound=3600)
    owed = await paid(ports)
    await paid(ports)  # and neither booked nor due back
    await ports.change(lambda uow: uow.payments.refund_due(owed.payment_id, "HOLD_EXPIRED"))
    within_an_hour = await _report(ports, bound=3600)
    await ports.elapse(0.1)
    late = await _report(ports)
    assert within_an_hour.refunds_pending - before.refunds_pending == 1
    assert (within_an_hour.refunds_overdue, within_an_hour.paid_unbooked) == (
        before_within_an_hour.refunds_overdue, before_within_an_hour.paid_unbooked)
    assert (late.refunds_overdue - before.refunds_overdue, late.paid_unbooked - before.paid_unbooked) == (1, 1)


async def _report(ports, bound: float = 0.05):  # type: ignore[no-untyped-def]
    async with ports.uow() as uow:
        return await uow.payments.unresolved(bound)


async def test_housekeeping_keeps_what_is_younger_than_the_retention(ports) -> None:
    event_id, customer = f"evt_{uuid.uuid4().hex}", 10**11 + uuid.uuid4().int % 10**11
    await ports.change(lambda uow: uow.callbacks.record(event_id, "checkout.session.completed", None))
    await ports.change(lambda uow: uow.keys.claim(customer, "k", "h", uuid.uuid4()))
    events, keys = await ports.change(lambda uow: uow.payments.purge(3 * 86400, 86400))
    assert events.startswith("DELETE") and keys.startswith("DELETE")
    async with ports.uow() as uow:
        assert await uow.callbacks.seen(event_id) and await uow.keys.get(customer, "k") is not None


# --- IdempotencyRepository and CallbackEventRepository --------------------------------------------------

async def test_a_key_is_claimed_once_per_customer(ports) -> None:
    customer, payment_id = 10**11 + uuid.uuid4().int % 10**11, uuid.uuid4()
    assert await ports.change(lambda uow: uow.keys.claim(customer, "k", "hash-1", payment_id)) is True
    assert await ports.change(lambda uow: uow.keys.claim(customer, "k", "hash-2", uuid.uuid4())) is False
    assert await ports.change(lambda uow: uow.keys.claim(customer + 1, "k", "hash-2", uuid.uuid4())) is True
    async with ports.uow() as uow:
        assert await uow.keys.get(customer, "k") == ("hash-1", payment_id)
        assert await uow.keys.get(customer, "other") is None


async def test_a_callback_event_is_recorded_once(ports) -> None:
    event_id = f"evt_{uuid.uuid4().hex}"
    async with ports.uow() as uow:
        assert not await uow.callbacks.seen(event_id)
        assert await uow.callbacks.record(event_id, "checkout.session.completed", "cs_1") is True
        assert await uow.callbacks.record(event_id, "checkout.session.completed", "cs_1") is False
        await uow.commit()
    async with ports.uow() as uow:
        assert await uow.callbacks.seen(event_id)
