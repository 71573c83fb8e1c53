"""The payment provider port's contract, run against the fake (tests/fakes/) and StripeGateway (the stripe
SDK) on the Stripe-shaped simulator process."""

from __future__ import annotations

import pytest
from payment_service.domain.errors import DependencyUnavailable, GatewayRejected

pytestmark = pytest.mark.integration


async def test_a_session_is_created_once_per_payment_and_starts_open(ports) -> None:
    payment = ports.payment(amount=1900)
    session = await ports.gateway.create_session(payment)
    assert await ports.gateway.create_session(payment) == session  # a retried checkout
    assert session.url.endswith(session.session_id)
    state = await ports.gateway.get_session(session.session_id)
    assert (state.session_id, state.status, state.amount_cents) == (session.session_id, "open", 1900)
    other = await ports.gateway.create_session(ports.payment())
    assert other.session_id != session.session_id


@pytest.mark.parametrize(("outcome", "status"), [("succeeded", "paid"), ("failed", "failed")])
async def test_the_customer_decides_a_session_and_a_cancel_then_changes_nothing(ports, outcome, status) -> None:
    session = await ports.gateway.create_session(ports.payment())
    await ports.pay(session.session_id, outcome)
    assert (await ports.gateway.get_session(session.session_id)).status == status
    assert (await ports.gateway.cancel_session(session.session_id)).status == status


async def test_a_session_stays_open_past_our_time_until_we_expire_it(ports) -> None:
    # Stripe ends a session 30 minutes after it was made at the soonest: ours end when we expire them.
    short = await ports.gateway.create_session(ports.payment(ttl=0.3))
    await ports.elapse(0.6)
    assert (await ports.gateway.get_session(short.session_id)).status == "open"
    assert (await ports.gateway.cancel_session(short.session_id)).status == "expired"
    assert (await ports.gateway.get_session(short.session_id)).status == "expired"
    assert (await ports.gateway.cancel_session(short.session_id)).status == "expired"  # asked again: the same


async def test_a_refund_is_idempotent_on_the_payment_and_only_for_paid_sessions(ports) -> None:
    payment = ports.payment()
    session = await ports.gateway.create_session(payment)
    with pytest.raises(GatewayRejected):
        await ports.gateway.refund(session.session_id, payment.payment_id, payment.amount_cents)  # still open
    await ports.pay(session.session_id, "succeeded")
    refund_id = await ports.gateway.refund(session.session_id, payment.payment_id, payment.amount_cents)
    assert await ports.gateway.refund(session.session_id, payment.payment_id, payment.amount_cents) == refund_id
    declined = await ports.gateway.create_session(ports.payment())
    await ports.pay(declined.session_id, "failed")
    with pytest.raises(GatewayRejected):
        await ports.gateway.refund(declined.session_id, payment.payment_id, payment.amount_cents)


async def test_an_unknown_session_is_rejected_by_every_call(ports) -> None:
    for call in (ports.gateway.get_session, ports.gateway.cancel_session):
        with pytest.raises(GatewayRejected):
            await call("cs_nobody_knows")
    with pytest.raises(GatewayRejected):
        await ports.gateway.refund("cs_nobody_knows", ports.payment().payment_id, 100)


async def test_a_gateway_that_cannot_be_reached_is_unavailable(ports) -> None:
    down = ports.unreachable_gateway()
    with pytest.raises(DependencyUnavailable):
        await down.create_session(ports.payment())
    with pytest.raises(DependencyUnavailable):
        await down.get_session("cs_any")
