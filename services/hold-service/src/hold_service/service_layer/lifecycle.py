"""What happens to a hold after it is taken: the sweeper and the payment confirmation."""

from __future__ import annotations

import logging
import uuid

from ticketing.logs import log_action

from hold_service.service_layer import events
from hold_service.service_layer.holds import release
from hold_service.service_layer.ports import Ports
from hold_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


async def sweep_expired(ports: Ports) -> int:
    """Free expired holds, one short transaction each (SKIP LOCKED: any number of sweepers).

    Only cosmetic for correctness (lazy expiry already lets others take the seats): the map shows
    AVAILABLE, the hold becomes EXPIRED and SeatsReleased{EXPIRED} tells payment-service.
    """
    swept = 0
    for _ in range(ports.settings.sweep_batch_size):
        async with ports.uow() as uow:
            claimed = await uow.holds.claim_expired(1)
            if not claimed:
                break
            found = await uow.holds.lock(claimed[0])
            assert found is not None  # locked by claim_expired in this transaction
            hold = found[0]
            await release(uow, hold, "EXPIRED")
            await uow.commit()
        swept += 1
        await ports.gate.release(hold.showtime_id, hold.seats, hold.hold_id)
        await ports.cache.invalidate(hold.showtime_id)
    if swept:
        log_action(logger, "hold.swept", swept=swept)
    return swept


async def confirm_booking(booking_id: uuid.UUID, payment_id: uuid.UUID, uow: UnitOfWork) -> str:
    """PaymentSucceeded: HELD -> BOOKED if not expired (one statement), else BookingFailed.

    Returns the outcome (for logs and tests).
    """
    found = await uow.holds.lock_by_booking(booking_id)
    if found is None:
        log_action(logger, "hold.confirm_unknown_booking", booking_id=str(booking_id))
        return "unknown"
    hold, expired = found
    if hold.status == "BOOKED" and hold.payment_id == payment_id:
        return "already_booked"
    if hold.status == "HELD" and not expired and await uow.holds.confirm(hold, payment_id):
        version = await uow.holds.bump_version(hold.showtime_id)
        await uow.holds.emit(events.booking_confirmed(hold, payment_id, version))
        log_action(logger, "hold.booked", hold_id=str(hold.hold_id), payment_id=str(payment_id))
        return "confirmed"
    if hold.status == "HELD":  # its time passed: end it now, its seats may already be someone else's
        await release(uow, hold, "EXPIRED")
    # A second payment for a booked hold cannot be honoured either; the payer gets a refund.
    reason = "HOLD_EXPIRED" if hold.status in ("HELD", "EXPIRED") else "HOLD_RELEASED"
    await uow.holds.emit(events.booking_failed(hold, payment_id, reason))
    log_action(logger, "hold.booking_failed", hold_id=str(hold.hold_id), reason=reason)
    return reason
