"""The money side of the booking saga (issue 11), on real Postgres and the real gateway simulator; the
gateway adapter is wrapped where a test needs to pause or refuse it. hold-service and voucher-service are
fakes (their sides have their own tests; tests/e2e runs them all together)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
import pytest_asyncio
from aiokafka import ConsumerRecord
from payment_service.adapters.repository import PgPaymentsUnitOfWork
from payment_service.adapters.stripe_provider import StripeGateway
from payment_service.bootstrap import Service, bootstrap
from payment_service.config import Settings
from payment_service.domain.commands import (
    EndPaymentOfReleasedHold,
    GatewayCallback,
    RecordBooking,
    RefundFailedBooking,
    StartCheckout,
)
from payment_service.domain.errors import DependencyUnavailable, HoldNotActive
from payment_service.domain.model import Payment
from payment_service.entrypoints.consumer import booking_events_consumer
from payment_service.service_layer import money, reactions
from payment_service.service_layer.callbacks import handle_callback
from payment_service.service_layer.checkout import start_checkout
from payment_service.service_layer.ports import GatewaySession
from prometheus_client import REGISTRY
from ticketing.events import BOOKING_EVENTS, booking_event, outgoing
from ticketing_testing import merchant_auth

pytestmark = pytest.mark.integration


class ControlledGateway(StripeGateway):
    """The Stripe adapter on the simulator, with a pause after a session is created and refunds refused on
    demand."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, timeout=5)
        self.session_created = asyncio.Event()
        self.go_on = asyncio.Event()
        self.go_on.set()
        self.refusals = 0

    async def create_session(self, payment: Payment) -> GatewaySession:
        session = await super().create_session(payment)
        self.session_created.set()
        await self.go_on.wait()
        return session

    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        if self.refusals > 0:
            self.refusals -= 1
            raise DependencyUnavailable("gateway: HTTP 502")
        return await super().refund(session_id, payment_id, amount_cents)


@pytest_asyncio.fixture
async def saga(payment_api, kit) -> AsyncIterator[tuple[Service, ControlledGateway]]:  # type: ignore[no-untyped-def]
    settings = payment_api.settings.model_copy(update={"refund_retry_first_seconds": 0.2, "reconcile_after_seconds": 0})
    gateway = ControlledGateway(settings)
    service = await bootstrap(settings, holds=payment_api.holds, vouchers=kit.stocked_vouchers(), gateway=gateway)
    yield service, gateway
    await service.close()


async def sim(settings, path: str, **body):  # type: ignore[no-untyped-def]
    url = f"{settings.stripe_api_base}{path}"
    async with httpx.AsyncClient(headers=merchant_auth()) as c:
        r = await (c.post(url, json=body) if body else c.get(url))
    assert r.status_code == 200, r.text
    return r.json()


async def refunds_of(settings: Settings, payment: Payment) -> list[str]:
    listed = await sim(settings, "/sim/sessions")
    return next(s["refundIds"] for s in listed if s["sessionId"] == payment.session_id)  # type: ignore[no-any-return]


async def events(service: Service, payment: Payment) -> list[str]:
    rows = await service.pool.fetch(
        "SELECT convert_from(payload, 'UTF8')::jsonb->>'type' AS t FROM outbox "
        "WHERE convert_from(payload, 'UTF8')::jsonb->'data'->>'paymentId' = $1 ORDER BY id", str(payment.payment_id))
    return [r["t"] for r in rows]


async def reload(service: Service, payment: Payment) -> Payment:
    async with service.deps.uow() as uow:
        found = await uow.payments.get(payment.payment_id)
    assert found is not None
    return found


def checkout_of(hold, key: str = "k", voucher: str | None = None) -> StartCheckout:  # type: ignore[no-untyped-def]
    return StartCheckout(hold_id=hold.hold_id, customer_id=hold.customer_id, idempotency_key=key, voucher_code=voucher)


async def test_declined_card_then_a_new_checkout_gets_the_voucher_again(saga, payment_api, kit) -> None:
    """Item 2: the voucher orderId is the paymentId; a new checkout of the hold gives back the use of the
    declined attempt first (even before its callback arrived) and reserves a new one for the new payment."""
    service, _ = saga
    vouchers = service.deps.vouchers
    hold = payment_api.holds.add(kit.unique_customer(), amount=2400)
    first = await start_checkout(checkout_of(hold, "k1", "TEN"), service.deps)
    assert vouchers.reserved == {first.payment_id: "TEN"} and first.discount_cents == 500  # type: ignore[attr-defined]
    await sim(service.deps.settings, f"/sim/sessions/{first.session_id}/pay", outcome="failed", delivery="never")
    second = await start_checkout(checkout_of(hold, "k2", "TEN"), service.deps)
    assert (await reload(service, first)).status == "FAILED"  # settled by the new checkout, no callback came
    assert vouchers.released == [first.payment_id]  # type: ignore[attr-defined]
    assert vouchers.reserved == {second.payment_id: "TEN"} and second.discount_cents == 500  # type: ignore[attr-defined]
    assert await events(service, first) == ["CheckoutStarted", "PaymentFailed"]


async def test_a_hold_released_while_its_session_is_created_is_never_left_payable(saga, payment_api, kit) -> None:
    """Item 4: SeatsReleased arrives while the checkout is between the gateway call and the database write.
    The checkout cancels the session it made (409 to the customer, PaymentFailed{EXPIRED}); had the customer
    paid it in that moment, the money would be due back, never kept."""
    service, gateway = saga
    hold = payment_api.holds.add(kit.unique_customer())
    gateway.go_on.clear()
    checkout = asyncio.create_task(start_checkout(checkout_of(hold), service.deps))
    await asyncio.wait_for(gateway.session_created.wait(), 10)
    async with service.pool.acquire() as conn, conn.transaction():  # the consumer's transaction
        await reactions.end_payment_of_released_hold(EndPaymentOfReleasedHold(hold.hold_id),
                                                     PgPaymentsUnitOfWork(conn=conn), service.deps.gateway)
    gateway.go_on.set()
    with pytest.raises(HoldNotActive):
        await checkout
    async with service.deps.uow() as uow:
        (payment,) = await uow.payments.of_hold(hold.hold_id)
    assert payment.status == "EXPIRED"
    assert (await sim(service.deps.settings, f"/v1/checkout/sessions/{payment.session_id}"))["status"] == "expired"
    assert await events(service, payment) == ["CheckoutStarted", "PaymentFailed"]


async def test_paid_at_the_gateway_after_being_settled_unpaid_is_refunded(saga, payment_api, kit) -> None:
    """Item 4, the other order: the customer's money reached the gateway after we had settled the payment
    as not paid. No PaymentSucceeded (nothing may book it); the reconciler refunds it, once."""
    service, _ = saga
    hold = payment_api.holds.add(kit.unique_customer())
    payment = await start_checkout(checkout_of(hold), service.deps)
    await sim(service.deps.settings, f"/sim/sessions/{payment.session_id}/pay", outcome="succeeded", delivery="never")
    async with service.deps.uow() as uow:  # as if a cancel had settled it just before the customer paid
        await uow.payments.settle(payment.payment_id, "EXPIRED")
        await uow.commit()
    cmd = GatewayCallback(event_id=f"evt_{uuid.uuid4().hex}", event_type="checkout.session.completed",
                          session_id=payment.session_id or "", reference=str(payment.payment_id))
    assert await handle_callback(cmd, service.deps) == "applied"
    assert await money.issue_refunds(service.deps) == 1
    refunded = await reload(service, payment)
    assert (refunded.status, refunded.refund_reason) == ("REFUNDED", "PAID_AFTER_SETTLEMENT")
    assert await events(service, payment) == ["CheckoutStarted", "RefundIssued"]
    assert len(await refunds_of(service.deps.settings, payment)) == 1


async def test_a_refund_the_gateway_refuses_is_retried_until_accepted(saga, payment_api, kit) -> None:
    """Item 5: three refusals, then the refund goes through, once; while it is overdue an operator sees it
    in a metric (and a log line); no DLQ anywhere."""
    service, gateway = saga
    hold = payment_api.holds.add(kit.unique_customer())
    payment = await start_checkout(checkout_of(hold), service.deps)
    await sim(service.deps.settings, f"/sim/sessions/{payment.session_id}/pay", outcome="succeeded", delivery="never")
    await money.settle_pending(service.deps)
    async with service.pool.acquire() as conn, conn.transaction():
        await reactions.refund_failed_booking(RefundFailedBooking(payment.payment_id, "HOLD_EXPIRED"),
                                              PgPaymentsUnitOfWork(conn=conn))
    gateway.refusals = 3
    for _ in range(3):
        assert await money.issue_refunds(service.deps) == 0
        async with service.pool.acquire() as conn:  # no waiting out the backoff in a test
            await conn.execute("UPDATE payment SET refund_next_at = now() WHERE payment_id = $1", payment.payment_id)
    strict = service.deps.settings.model_copy(update={"refund_alert_seconds": 0.001})
    await asyncio.sleep(0.01)
    report = await money.report_unresolved(type(service.deps)(**{**vars(service.deps), "settings": strict}))
    assert report.refunds_overdue >= 1
    assert REGISTRY.get_sample_value("ticketing_payment_money_unresolved", {"kind": "refunds_overdue"}) >= 1
    assert await money.issue_refunds(service.deps) == 1
    refunded = await reload(service, payment)
    assert (refunded.status, refunded.refund_attempts) == ("REFUNDED", 3)
    assert await events(service, payment) == ["CheckoutStarted", "PaymentSucceeded", "RefundIssued"]


async def test_a_late_failure_of_an_earlier_attempt_changes_nothing_of_the_paid_one(saga, payment_api, kit) -> None:
    """Item 7: attempt 1 declined, attempt 2 paid and booked; attempt 1's failure callback arriving again,
    late, and a BookingFailed for attempt 1 change nothing of attempt 2 (every transition is conditional)."""
    service, _ = saga
    hold = payment_api.holds.add(kit.unique_customer())
    first = await start_checkout(checkout_of(hold, "a"), service.deps)
    await sim(service.deps.settings, f"/sim/sessions/{first.session_id}/pay", outcome="failed", delivery="never")
    second = await start_checkout(checkout_of(hold, "b"), service.deps)
    await sim(service.deps.settings, f"/sim/sessions/{second.session_id}/pay", outcome="succeeded", delivery="never")
    await money.settle_pending(service.deps)
    async with service.pool.acquire() as conn, conn.transaction():
        uow = PgPaymentsUnitOfWork(conn=conn)
        await reactions.record_booking(RecordBooking(second.payment_id), uow)
        await reactions.refund_failed_booking(RefundFailedBooking(second.payment_id, "HOLD_EXPIRED"), uow)
        await reactions.refund_failed_booking(RefundFailedBooking(first.payment_id, "HOLD_EXPIRED"), uow)
    late = GatewayCallback(event_id=f"evt_{uuid.uuid4().hex}", event_type="checkout.session.async_payment_failed",
                           session_id=first.session_id or "", reference=str(first.payment_id))
    await handle_callback(late, service.deps)
    assert await money.issue_refunds(service.deps) == 0
    assert ((await reload(service, first)).status, (await reload(service, second)).status) == ("FAILED", "SUCCEEDED")
    assert await events(service, second) == ["CheckoutStarted", "PaymentSucceeded"]


async def test_hold_service_decides_whether_a_hold_is_active(saga, payment_api, kit) -> None:
    """Item 11: payment-service trusts the hold's status (hold-service's clock), never its own clock; the
    session ends within the hold, which the checkout first extends past it by the grace."""
    service, _ = saga
    customer = kit.unique_customer()
    expired_there = payment_api.holds.add(customer, status="EXPIRED")  # its expires_at is 10 minutes ahead here
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout_of(expired_there), service.deps)
    short = payment_api.holds.add(customer, ttl=30)
    payment = await start_checkout(checkout_of(short, "s"), service.deps)
    grace = timedelta(seconds=service.deps.settings.payment_confirm_grace_seconds)
    assert payment.expires_at + grace == payment_api.holds.holds[short.hold_id].expires_at


def booking_record(payment: Payment, type_: str, data: dict, event_id: uuid.UUID | None = None):  # type: ignore[no-untyped-def,type-arg]
    """A booking-events record as hold-service publishes it, for the service's own consumer."""
    event = booking_event(type_, source="hold-service", booking_id=payment.booking_id,
                          showtime_id=payment.showtime_id, customer_id=payment.customer_id, data=data,
                          event_id=event_id)
    value = outgoing(event).value
    return ConsumerRecord(BOOKING_EVENTS, 0, 0, 0, 0, str(payment.booking_id).encode(), value, None, 0,
                          len(value), ())


async def paid_booking(service: Service, payment_api, kit, amount: int = 2400) -> Payment:  # type: ignore[no-untyped-def]
    hold = payment_api.holds.add(kit.unique_customer(), amount=amount)
    payment = await start_checkout(checkout_of(hold), service.deps)
    await sim(service.deps.settings, f"/sim/sessions/{payment.session_id}/pay", outcome="succeeded", delivery="never")
    return payment


def cancellation(payment: Payment, reason: str = "SHOWTIME_CANCELLED") -> dict:  # type: ignore[type-arg]
    return {"holdId": payment.hold_id, "seats": ["A1"], "reason": reason, "paymentId": payment.payment_id,
            "seatMapVersion": 9}


async def test_a_showtime_s_cancelled_bookings_are_refunded_once_while_the_gateway_refuses_the_first(
        saga, payment_api, kit) -> None:
    """R19's money side, through the service's own booking-events consumer (its inbox) and the real gateway
    simulator told to refuse the first refunds: every cancelled booking is refunded in full exactly once by
    the money reconciler, whatever the events' order and repeats; nothing is left due."""
    service, _ = saga
    payments = [await paid_booking(service, payment_api, kit, amount=1200 + 100 * n) for n in range(12)]
    await money.settle_pending(service.deps)
    consumer = booking_events_consumer(service.deps, service.pool)
    confirmed = {p.payment_id: {"holdId": p.hold_id, "seats": ["A1"], "amountCents": p.amount_cents,
                                "discountCents": 0, "paymentId": p.payment_id, "seatMapVersion": 5}
                 for p in payments}
    answers: dict[str, int] = {}
    for n, payment in enumerate(payments):
        cancel = booking_record(payment, "BookingCancelled", cancellation(payment), uuid.uuid4())
        confirm = booking_record(payment, "BookingConfirmed", confirmed[payment.payment_id])
        customer = booking_record(payment, "BookingCancelled", cancellation(payment, "CUSTOMER"))
        # Half in order, half with the cancellation first; each cancellation redelivered; some racing a
        # customer's own cancellation.
        order = [confirm, cancel, cancel] if n % 2 else [cancel, confirm, cancel]
        for record in [*order, *([customer] if n % 3 == 0 else [])]:
            answer = await consumer.inbox.apply(record)
            answers[answer] = answers.get(answer, 0) + 1
    assert answers == {"applied": 12 * 2 + 4, "duplicate": 12}
    await sim(service.deps.settings, "/sim/refunds/refuse", count=7)
    for _ in range(20):
        await money.issue_refunds(service.deps)
        async with service.pool.acquire() as conn:  # no waiting out the backoff in a test
            await conn.execute("UPDATE payment SET refund_next_at = now() WHERE payment_id = ANY($1::uuid[]) "
                               "AND status <> 'REFUNDED'", [p.payment_id for p in payments])
        if {(await reload(service, p)).status for p in payments} == {"REFUNDED"}:
            break
    refunded = [await reload(service, p) for p in payments]
    assert {p.status for p in refunded} == {"REFUNDED"}
    assert 0 < sum(p.refund_attempts for p in refunded) <= 7  # refused (other refunds due may take some), retried
    assert {p.refund_reason for p in refunded} == {"SHOWTIME_CANCELLED"}
    for payment in payments:
        assert await events(service, payment) == ["CheckoutStarted", "PaymentSucceeded", "RefundIssued"]
        assert len(await refunds_of(service.deps.settings, payment)) == 1
    amounts = await service.pool.fetch(
        "SELECT (convert_from(payload, 'UTF8')::jsonb->'data'->>'amountCents')::int AS a FROM outbox "
        "WHERE convert_from(payload, 'UTF8')::jsonb->>'type' = 'RefundIssued' "
        "AND convert_from(payload, 'UTF8')::jsonb->'data'->>'paymentId' = ANY($1::text[]) ORDER BY 1",
        [str(p.payment_id) for p in payments])
    assert [r["a"] for r in amounts] == sorted(p.amount_cents for p in payments)
    booked = await service.pool.fetchval("SELECT count(*) FROM payment WHERE payment_id = ANY($1::uuid[]) "
                                         "AND booking_confirmed_at IS NOT NULL", [p.payment_id for p in payments])
    assert booked == 12


async def test_a_hold_released_with_its_cancelled_showtime_leaves_no_payment_pending(saga, payment_api, kit) -> None:
    """SeatsReleased{SHOWTIME_CANCELLED} for a hold whose customer is on the gateway's page: its session is
    cancelled at the gateway and the payment ends EXPIRED (PaymentFailed{EXPIRED} releases the voucher use)."""
    service, _ = saga
    hold = payment_api.holds.add(kit.unique_customer())
    payment = await start_checkout(checkout_of(hold, "sc"), service.deps)
    consumer = booking_events_consumer(service.deps, service.pool)
    released = booking_record(payment, "SeatsReleased", {"holdId": hold.hold_id, "seats": ["A1"],
                                                         "reason": "SHOWTIME_CANCELLED", "seatMapVersion": 4})
    assert await consumer.inbox.apply(released) == "applied"
    assert (await reload(service, payment)).status == "EXPIRED"
    assert (await sim(service.deps.settings, f"/v1/checkout/sessions/{payment.session_id}"))["status"] == "expired"
    assert await events(service, payment) == ["CheckoutStarted", "PaymentFailed"]
