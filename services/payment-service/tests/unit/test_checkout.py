"""start_checkout on the fakes: the hold, the voucher, the PENDING payment, the gateway session."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from payment_service.domain.commands import EndPaymentOfReleasedHold, StartCheckout
from payment_service.domain.errors import (
    CheckoutLimit,
    DependencyUnavailable,
    HoldNotActive,
    HoldNotFound,
    IdempotencyKeyReused,
    ShowtimeClosed,
    VoucherRejected,
)
from payment_service.entrypoints.api.errors import to_api_error
from payment_service.service_layer import money, reactions
from payment_service.service_layer.checkout import start_checkout


def checkout(hold, key: str = "k1", voucher: str | None = None, customer: int | None = None) -> StartCheckout:  # type: ignore[no-untyped-def]
    return StartCheckout(hold_id=hold.hold_id, customer_id=customer or hold.customer_id, idempotency_key=key,
                         voucher_code=voucher)


def types(world, payment_id: uuid.UUID) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.type for e in world.events(payment_id)]


async def test_a_checkout_records_a_pending_payment_with_its_session(kit) -> None:
    world = kit.fakes.fake_deps(payment_session_ttl_seconds=480)
    hold = world.holds.add(7, amount=2400, ttl=600)
    payment = await start_checkout(checkout(hold), world.deps)
    assert (payment.status, payment.amount_cents, payment.booking_id) == ("PENDING", 2400, hold.booking_id)
    assert payment.expires_at == world.clock.now() + timedelta(seconds=480)
    assert payment.redirect_url == f"https://gateway.test/pay/{payment.session_id}"
    assert world.gateway.sessions[payment.session_id or ""].reference == str(payment.payment_id)
    (started,) = world.events(payment.payment_id)
    assert (started.type, started.data.amountCents, started.data.expiresAt) == (
        "CheckoutStarted", 2400, payment.expires_at)


async def test_a_checkout_late_in_the_hold_extends_it_past_the_session_by_the_grace(kit) -> None:
    world = kit.fakes.fake_deps(payment_session_ttl_seconds=480, payment_confirm_grace_seconds=120)
    hold = world.holds.add(7, ttl=10, age=590)  # ten seconds left of its ten minutes
    extended_first = []
    world.gateway.during_create = lambda: _noted(extended_first, list(world.holds.extended))
    payment = await start_checkout(checkout(hold), world.deps)
    now = world.clock.now()
    assert payment.expires_at == now + timedelta(seconds=480)  # a whole session, not the hold's ten seconds
    assert world.holds.extended == [(hold.hold_id, now + timedelta(seconds=600))]  # the session's end + grace
    assert extended_first == [world.holds.extended]  # extended BEFORE the gateway session existed
    assert (await world.holds.get(hold.hold_id)).expires_at == now + timedelta(seconds=600)


async def _noted(into: list, what: object) -> None:  # type: ignore[type-arg]
    into.append(what)


async def test_the_session_ends_the_grace_before_the_hold_can_last_no_longer(kit) -> None:
    world = kit.fakes.fake_deps(payment_session_ttl_seconds=480, payment_confirm_grace_seconds=120,
                                hold_max_seconds=1200)
    hold = world.holds.add(7, ttl=300, age=650)  # extended once already; 550 s left of HOLD_MAX
    payment = await start_checkout(checkout(hold), world.deps)
    cap = hold.created_at + timedelta(seconds=1200)
    assert payment.expires_at == cap - timedelta(seconds=120)
    assert (await world.holds.get(hold.hold_id)).expires_at == cap


async def test_too_little_time_left_says_hold_again_and_records_nothing(kit) -> None:
    world = kit.fakes.fake_deps(payment_confirm_grace_seconds=120, payment_min_session_seconds=60)
    world.vouchers.add("TEN")
    hold = world.holds.add(7, ttl=170, age=1030)  # 50 s of session would be left, fewer than 60
    with pytest.raises(HoldNotActive, match="hold the seats again"):
        await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    assert world.db.committed("payments") == [] and world.vouchers.reserved == {} and world.holds.extended == []


async def test_a_hold_that_ended_before_its_extension_expires_the_payment_and_opens_no_session(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN")
    hold = world.holds.add(7)
    real_extend = world.holds.extend

    async def released_first(*args: object) -> object:
        world.holds.end(hold.hold_id)  # the customer cancelled in another tab, just then
        return await real_extend(*args)  # type: ignore[arg-type]

    world.holds.extend = released_first  # type: ignore[method-assign]
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    (row,) = world.db.committed("payments")
    assert (row.payment.status, row.payment.session_id, world.gateway.sessions) == ("EXPIRED", None, {})
    assert [(e.type, e.data.reason) for e in world.events(row.payment.payment_id)] == [("PaymentFailed", "EXPIRED")]


async def test_a_showtime_whose_sales_closed_is_not_checked_out_and_the_payment_ends(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN")
    hold = world.holds.add(7)
    world.holds.closed.add(hold.showtime_id)  # hold-service answers 409 SHOWTIME_CLOSED to the extension
    with pytest.raises(ShowtimeClosed):
        await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    (row,) = world.db.committed("payments")
    assert (row.payment.status, row.payment.session_id, world.gateway.sessions) == ("EXPIRED", None, {})
    assert to_api_error(ShowtimeClosed("closed")).code == "SHOWTIME_CLOSED"


async def test_a_hold_is_checked_out_at_most_max_checkouts_times(kit) -> None:
    world = kit.fakes.fake_deps(max_checkouts_per_hold=3)
    world.vouchers.add("ONCE", discount=500, limit=1)
    hold = world.holds.add(7)
    for attempt in range(3):
        payment = await start_checkout(checkout(hold, f"k{attempt}", "ONCE"), world.deps)
        assert payment.discount_cents == 500  # the declined attempt's use came back each time
        world.gateway.pay(payment.session_id, "failed")
    with pytest.raises(CheckoutLimit, match="hold the seats again"):
        await start_checkout(checkout(hold, "k3", "ONCE"), world.deps)
    assert world.vouchers.reserved == {}  # the last declined attempt's use came back too
    assert [r.payment.status for r in world.db.committed("payments")] == ["FAILED"] * 3
    assert len(world.gateway.sessions) == 3


async def test_a_replay_returns_the_recorded_payment_and_does_nothing_else(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN")
    hold = world.holds.add(7)
    first = await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    world.holds.end(hold.hold_id)  # a replay does not even look at the hold
    assert await start_checkout(checkout(hold, voucher="TEN"), world.deps) == first
    assert len(world.gateway.sessions) == 1 and types(world, first.payment_id) == ["CheckoutStarted"]


async def test_another_body_under_the_key_is_refused(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN")
    hold = world.holds.add(7)
    first = await start_checkout(checkout(hold), world.deps)
    with pytest.raises(IdempotencyKeyReused):
        await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    assert world.vouchers.reserved == {} and len(world.events()) == 1 and first.discount_cents == 0


async def test_a_checkout_retried_after_the_gateway_failed_resumes_the_same_payment(kit) -> None:
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7)
    world.gateway.failing.add("create_session")
    with pytest.raises(DependencyUnavailable):
        await start_checkout(checkout(hold), world.deps)
    world.gateway.failing.clear()
    payment = await start_checkout(checkout(hold), world.deps)
    assert payment.session_id is not None and len(world.gateway.sessions) == 1
    assert [r.payment.payment_id for r in world.db.committed("payments")] == [payment.payment_id]


@pytest.mark.parametrize("whose", ["unknown", "another customer's"])
async def test_a_hold_the_customer_cannot_see_is_not_found(kit, whose: str) -> None:
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7)
    cmd = checkout(hold, customer=8) if whose != "unknown" else StartCheckout(uuid.uuid4(), 7, "k1", None)
    with pytest.raises(HoldNotFound):
        await start_checkout(cmd, world.deps)
    assert world.db.committed("payments") == [] and world.gateway.sessions == {}


@pytest.mark.parametrize("status", ["EXPIRED", "RELEASED", "BOOKED"])
async def test_a_hold_that_is_not_held_cannot_be_paid(kit, status: str) -> None:
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7, status=status)
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout(hold), world.deps)
    assert world.db.committed("payments") == []


async def test_the_voucher_is_reserved_for_the_payment_and_discounted(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN", discount=500)
    hold = world.holds.add(7, amount=2400)
    payment = await start_checkout(checkout(hold, voucher="TEN"), world.deps)
    assert world.vouchers.reserved == {payment.payment_id: "TEN"}  # orderId = paymentId
    assert (payment.amount_cents, payment.discount_cents, payment.voucher_code) == (1900, 500, "TEN")
    assert world.gateway.sessions[payment.session_id or ""].amount_cents == 1900


async def test_a_rejected_voucher_records_nothing(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("GONE", limit=0)
    hold = world.holds.add(7)
    with pytest.raises(VoucherRejected) as rejected:
        await start_checkout(checkout(hold, voucher="GONE"), world.deps)
    assert (rejected.value.status, rejected.value.code) == (409, "OUT_OF_STOCK")
    assert world.db.committed("payments") == [] and world.gateway.sessions == {}


async def test_a_new_checkout_settles_a_declined_attempt_and_gives_its_voucher_use_back(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("ONCE", discount=500, limit=1)
    hold = world.holds.add(7)
    first = await start_checkout(checkout(hold, "k1", "ONCE"), world.deps)
    world.gateway.pay(first.session_id, "failed")  # declined; its callback has not arrived
    second = await start_checkout(checkout(hold, "k2", "ONCE"), world.deps)  # the one use is free again
    assert world.row(first.payment_id).payment.status == "FAILED"
    assert types(world, first.payment_id) == ["CheckoutStarted", "PaymentFailed"]
    assert world.vouchers.reserved == {second.payment_id: "ONCE"} and second.discount_cents == 500


async def test_an_earlier_attempt_the_gateway_forgot_is_left_to_the_reconciler(kit) -> None:
    """A gateway that lost its sessions (restarted) does not turn the next checkout into a 503: the
    unknown attempt stays PENDING for the reconciler, and only it blocks a second live payment."""
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7)
    first = await start_checkout(checkout(hold, "k1"), world.deps)
    world.gateway.forget()
    with pytest.raises(HoldNotActive):  # not GatewayRejected: the earlier attempt is still live
        await start_checkout(checkout(hold, "k2"), world.deps)
    assert world.row(first.payment_id).payment.status == "PENDING"


async def test_a_second_checkout_while_one_is_live_gives_its_new_voucher_use_back(kit) -> None:
    world = kit.fakes.fake_deps()
    world.vouchers.add("TEN", limit=2)
    hold = world.holds.add(7)
    first = await start_checkout(checkout(hold, "k1", "TEN"), world.deps)
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout(hold, "k2", "TEN"), world.deps)
    assert world.vouchers.reserved == {first.payment_id: "TEN"}
    assert [r.payment.payment_id for r in world.db.committed("payments")] == [first.payment_id]


async def test_a_hold_released_while_its_session_is_created_cancels_the_session(kit) -> None:
    world = kit.fakes.fake_deps()
    hold = world.holds.add(7)

    async def seats_released_meanwhile() -> None:  # hold-service's SeatsReleased, consumed right then
        async with world.deps.uow() as uow:
            await reactions.end_payment_of_released_hold(EndPaymentOfReleasedHold(hold.hold_id), uow,
                                                         world.deps.gateway)
            await uow.commit()

    world.gateway.during_create = seats_released_meanwhile
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout(hold), world.deps)
    (row,) = world.db.committed("payments")
    assert row.payment.status == "EXPIRED" and world.gateway.sessions[row.payment.session_id].status == "expired"
    assert types(world, row.payment.payment_id) == ["CheckoutStarted", "PaymentFailed"]
    assert world.events(row.payment.payment_id)[1].data.reason == "EXPIRED"


async def test_a_retry_of_a_checkout_the_reconciler_expired_meanwhile_opens_no_session(kit) -> None:
    """The first attempt died before the gateway answered; its payment ran out of time and the reconciler
    expired it (PaymentFailed). A retry under the key must not open a session for it nor announce it."""
    world = kit.fakes.fake_deps(payment_session_ttl_seconds=480, reconcile_after_seconds=0)
    hold = world.holds.add(7, ttl=600)
    world.gateway.failing.add("create_session")
    with pytest.raises(DependencyUnavailable):
        await start_checkout(checkout(hold), world.deps)
    world.gateway.failing.clear()
    world.clock.advance(481)  # the hold is still HELD, the payment's session time is over
    assert await money.settle_pending(world.deps) == 1
    with pytest.raises(HoldNotActive):
        await start_checkout(checkout(hold), world.deps)
    (row,) = world.db.committed("payments")
    assert (row.payment.status, row.payment.session_id, world.gateway.sessions) == ("EXPIRED", None, {})
    assert [e.type for e in world.events(row.payment.payment_id)] == ["PaymentFailed"]
