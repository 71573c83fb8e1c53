"""booking-events move the use of the payment they name (orderId = paymentId); a stale event never undoes a
later state (service_layer/outcomes.py). Real Kafka, Postgres and the booking-events consumer."""

from __future__ import annotations

import logging
import uuid

import asyncpg
import pytest
from ticketing_testing import eventually
from voucher_service.domain.commands import ConfirmReservation, ReleaseReservation, ReserveVoucher
from voucher_service.domain.errors import ReservationConfirmed, ReservationReleased
from voucher_service.entrypoints.consumer import booking_handlers
from voucher_service.service_layer.handlers import confirm_reservation, release_reservation, reserve_voucher
from voucher_service.service_layer.ports import Deps
from voucher_testkit import (
    assert_invariant,
    new_voucher,
    publish_events,
    saga_event,
    statuses,
    unique_customer,
)

pytestmark = pytest.mark.integration


def _confirm_after_release(caplog: pytest.LogCaptureFixture, order: str) -> bool:
    return any(getattr(r, "action", None) == "voucher.confirm_after_release" and r.levelno == logging.ERROR
               and getattr(r, "order_id", None) == order for r in caplog.records)


async def test_a_declined_attempt_then_a_paid_one_and_stale_events(deps: Deps, pool: asyncpg.Pool,
                                                                   kafka_bootstrap: str, booking_consumer: None,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Issue 11 cases 2 and 7: one hold, attempt 1 declined, attempt 2 paid with the same voucher (limit 1 per
    customer); then the events arrive again and late, in the worst order."""
    code = await new_voucher(deps, limit=5)
    booking, customer = str(uuid.uuid4()), unique_customer()
    declined, paid = str(uuid.uuid4()), str(uuid.uuid4())
    await reserve_voucher(ReserveVoucher(code, customer, declined, 1000), deps)
    await publish_events(kafka_bootstrap, [saga_event("PaymentFailed", declined, booking)])

    async def released() -> bool:
        return await statuses(pool, [declined]) == {declined: "RELEASED"}
    await eventually(released, timeout=60)  # a first join of the group may wait for a rebalance
    await reserve_voucher(ReserveVoucher(code, customer, paid, 1000), deps)  # the customer keeps his voucher
    late = str(uuid.uuid4())  # another booking: paid after its hold expired (BookingFailed), then a stale confirm
    await reserve_voucher(ReserveVoucher(code, unique_customer(), late, 1000), deps)
    kept = str(uuid.uuid4())  # another booking whose seats are released: no payment named yet, nothing moves
    await reserve_voucher(ReserveVoucher(code, unique_customer(), kept, 1000), deps)
    other = str(uuid.uuid4())
    await publish_events(kafka_bootstrap, [
        saga_event("BookingConfirmed", paid, booking),
        saga_event("PaymentFailed", declined, booking, reason="EXPIRED"),  # attempt 1 again: not attempt 2's use
        saga_event("PaymentFailed", paid, booking),  # stale: the use is confirmed
        saga_event("BookingFailed", late, other),
        saga_event("BookingConfirmed", late, other),  # stale: never resurrects the released use
        saga_event("SeatsReleased", str(uuid.uuid4()), kept),
    ])
    expected = {declined: "RELEASED", paid: "CONFIRMED", late: "RELEASED", kept: "RESERVED"}

    async def settled() -> bool:
        return await statuses(pool, list(expected)) == expected and _confirm_after_release(caplog, late)
    await eventually(settled, timeout=60)
    assert await assert_invariant(pool, code) == 2
    assert "SeatsReleased" not in booking_handlers(deps)


async def test_stale_commands_change_nothing(deps: Deps, pool: asyncpg.Pool,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """The same rules through the handlers payment-service's HTTP calls reach."""
    code = await new_voucher(deps, limit=2)
    confirmed, released = str(uuid.uuid4()), str(uuid.uuid4())
    for order in (confirmed, released):
        await reserve_voucher(ReserveVoucher(code, unique_customer(), order, 1000), deps)
    assert await confirm_reservation(ConfirmReservation(confirmed, code), deps)
    assert await release_reservation(ReleaseReservation(released, code), deps)
    with pytest.raises(ReservationConfirmed):
        await release_reservation(ReleaseReservation(confirmed, code), deps)
    with caplog.at_level(logging.INFO):
        with pytest.raises(ReservationReleased):
            await confirm_reservation(ConfirmReservation(released, code), deps)
    assert _confirm_after_release(caplog, released)
    assert await statuses(pool, [confirmed, released]) == {confirmed: "CONFIRMED", released: "RELEASED"}
    assert await assert_invariant(pool, code) == 1
