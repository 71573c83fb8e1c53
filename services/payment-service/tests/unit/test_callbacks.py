"""handle_callback and apply_gateway_state on the fakes: the gateway's session state settles a payment."""

from __future__ import annotations

import uuid

import pytest
from payment_service.domain.commands import GatewayCallback, StartCheckout
from payment_service.domain.errors import DependencyUnavailable
from payment_service.service_layer.callbacks import handle_callback
from payment_service.service_layer.checkout import start_checkout
from payment_service.service_layer.ports import GatewayState
from payment_service.service_layer.settlement import apply_gateway_state


async def started(world):  # type: ignore[no-untyped-def]
    hold = world.holds.add(7, amount=2400)
    return await start_checkout(StartCheckout(hold.hold_id, 7, "k1", None), world.deps)


def callback(payment, kind: str = "checkout.session.completed", event_id: str | None = None,  # type: ignore[no-untyped-def]
             reference: str | None = None) -> GatewayCallback:
    return GatewayCallback(event_id=event_id or f"evt_{uuid.uuid4().hex}", event_type=kind,
                           session_id=payment.session_id, reference=reference or str(payment.payment_id))


async def seen(world, event_id: str) -> bool:  # type: ignore[no-untyped-def]
    async with world.deps.uow() as uow:
        return bool(await uow.callbacks.seen(event_id))


@pytest.mark.parametrize(("outcome", "status", "event"), [
    ("succeeded", "SUCCEEDED", ("PaymentSucceeded", 2400)), ("failed", "FAILED", ("PaymentFailed", "DECLINED"))])
async def test_a_decided_session_settles_the_payment_once(kit, outcome: str, status: str, event: tuple) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.pay(payment.session_id, outcome)
    cmd = callback(payment, "checkout.session.completed")  # the callback's type does not matter: the session decides
    assert await handle_callback(cmd, world.deps) == "applied"
    assert await handle_callback(cmd, world.deps) == "duplicate"
    assert await handle_callback(callback(payment), world.deps) == "applied"  # another event id: nothing new
    assert world.row(payment.payment_id).payment.status == status
    settled = world.events(payment.payment_id)[1:]
    assert [(e.type, getattr(e.data, "amountCents", None) or e.data.reason) for e in settled] == [event]


async def test_an_open_session_decides_nothing_and_keeps_the_event_id_unused(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    cmd = callback(payment)
    assert await handle_callback(cmd, world.deps) == "pending"
    assert world.row(payment.payment_id).payment.status == "PENDING" and not await seen(world, cmd.event_id)
    world.gateway.pay(payment.session_id)
    assert await handle_callback(cmd, world.deps) == "applied"  # the gateway's retry of that event


@pytest.mark.parametrize("reference", ["not-a-uuid", str(uuid.uuid4())], ids=["not-a-uuid", "unknown-uuid"])
async def test_a_callback_for_no_payment_of_ours_is_recorded_and_ignored(kit, reference: str) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    cmd = callback(payment, reference=reference)
    assert await handle_callback(cmd, world.deps) == "unknown"
    assert await handle_callback(cmd, world.deps) == "duplicate"
    assert world.row(payment.payment_id).payment.status == "PENDING"


async def test_a_callback_pairing_a_payment_with_another_payments_session_is_ignored(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    other_hold = world.holds.add(8)
    other = await start_checkout(StartCheckout(other_hold.hold_id, 8, "k1", None), world.deps)
    world.gateway.pay(other.session_id)
    cmd = GatewayCallback(event_id="evt_1", event_type="checkout.session.completed", session_id=other.session_id,
                          reference=str(payment.payment_id))
    assert await handle_callback(cmd, world.deps) == "unknown"
    assert world.row(payment.payment_id).payment.status == "PENDING"


async def test_a_session_the_gateway_does_not_know_is_looked_at_again_later(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.forget()  # a restarted in-memory gateway
    cmd = callback(payment)
    assert await handle_callback(cmd, world.deps) == "unknown"
    assert not await seen(world, cmd.event_id) and world.row(payment.payment_id).payment.status == "PENDING"


async def test_a_gateway_that_cannot_be_asked_is_a_503_and_changes_nothing(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    world.gateway.pay(payment.session_id)
    world.gateway.down = True
    cmd = callback(payment)
    with pytest.raises(DependencyUnavailable):
        await handle_callback(cmd, world.deps)
    assert not await seen(world, cmd.event_id) and world.row(payment.payment_id).payment.status == "PENDING"


async def test_paid_after_settlement_is_due_back_without_payment_succeeded(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    paid = GatewayState(session_id=payment.session_id, status="paid", amount_cents=2400)
    async with world.deps.uow() as uow:
        await uow.payments.settle(payment.payment_id, "EXPIRED")  # a cancel settled it a moment earlier
        await uow.commit()
    for _ in range(2):
        async with world.deps.uow() as uow:
            assert await apply_gateway_state(uow, payment.payment_id, paid) is None
            await uow.commit()
    row = world.row(payment.payment_id)
    assert (row.payment.status, row.payment.refund_reason) == ("EXPIRED", "PAID_AFTER_SETTLEMENT")
    assert row.refund_due_since == world.clock.now()
    assert [e.type for e in world.events(payment.payment_id)] == ["CheckoutStarted"]


async def test_an_open_state_settles_nothing(kit) -> None:
    world = kit.fakes.fake_deps()
    payment = await started(world)
    async with world.deps.uow() as uow:
        opened = GatewayState(session_id=payment.session_id, status="open", amount_cents=2400)
        assert await apply_gateway_state(uow, payment.payment_id, opened) is None
        await uow.commit()
    assert world.row(payment.payment_id).payment.status == "PENDING"
