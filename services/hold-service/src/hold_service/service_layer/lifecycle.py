"""What happens to a hold after it is taken: its extension at checkout, the sweeper and the payment's
confirmation.

The booking saga's steps owned here (docs/saga.md): a checkout extends a live HELD hold past its payment
session by the grace (HoldExtended), so that PaymentSucceeded, applied up to the grace late, still finds it
live and books it (BookingConfirmed with the amount paid); when the hold expired or was released meanwhile,
PaymentSucceeded ends it and says BookingFailed so that payment-service refunds. Every step is a conditional
change under the booking row's lock, so a late or repeated event never undoes a later state, and an ended
hold is never revived.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from prometheus_client import Gauge
from ticketing.logs import log_action

from hold_service.domain.commands import ConfirmBooking, ExtendHold
from hold_service.domain.errors import HoldNotActive, HoldNotFound, ShowtimeClosed
from hold_service.service_layer import events
from hold_service.service_layer.ports import Backlog, Deps, HoldsUnitOfWork

logger = logging.getLogger(__name__)
# Refreshed by the sweeper after each sweep; several sweepers read the same table: the rules take the max.
BACKLOG_HOLDS = Gauge("ticketing_hold_expired_backlog_holds", "Holds whose time has passed still HELD (the sweeper's "
                      "backlog), at the last sweep", multiprocess_mode="max")
BACKLOG_OLDEST = Gauge("ticketing_hold_expired_backlog_oldest_seconds",
                       "Seconds since the oldest hold of the sweeper's backlog expired (0: none), at the last sweep",
                       multiprocess_mode="max")


async def extend_hold(cmd: ExtendHold, deps: Deps) -> datetime:
    """The hold's expiry becomes max(its expiry, until), at most its creation + HOLD_MAX_SECONDS, with
    HoldExtended in the same transaction when it moved (a repeat changes nothing: idempotent). Not HELD and
    live (released, expired, booked): HoldNotActive, never revived; its showtime's sales closed (or it was
    cancelled): ShowtimeClosed, and nothing changed. Its gate keys last as long."""
    async with deps.uow() as uow:
        hold = await uow.holds.get(cmd.hold_id)
        if hold is None or not hold.visible_to(cmd.customer_id):
            raise HoldNotFound(str(cmd.hold_id))
        extension = await uow.holds.extend(cmd.hold_id, cmd.until, deps.settings.hold_max_seconds,
                                           deps.settings.sales_close_minutes_before_start)
        if extension is not None and extension.closed:
            raise ShowtimeClosed("sales of this showtime are closed: it cannot be paid for now")
        if extension is None:
            raise HoldNotActive(f"the hold is {hold.status if hold.status != 'HELD' else 'over'}: "
                                "hold the seats again")
        if extension.moved:
            await uow.holds.emit(events.hold_extended(hold, extension.expires_at))
        await uow.commit()
    if extension.moved:
        log_action(logger, "hold.extended", hold_id=str(hold.hold_id), expires_at=extension.expires_at.isoformat())
        await deps.admission.keep(hold.showtime_id, hold.seats, hold.hold_id, extension.expires_at)
    return extension.expires_at


async def sweep_expired(deps: Deps) -> int:
    """End expired holds in batches: one statement ends up to SWEEP_BATCH_SIZE of them, oldest first (SKIP
    LOCKED: sweepers in several replicas each take holds of their own), again while a batch comes back full,
    at most SWEEP_MAX_BATCHES statements (one short transaction each); then the backlog left is measured.

    Only cosmetic for correctness (lazy expiry already lets others take the seats): the map shows the
    seats AVAILABLE, the hold becomes EXPIRED and SeatsReleased{EXPIRED} tells payment-service and
    voucher-service to let go of what belongs to the hold.
    """
    swept, size, started = 0, deps.settings.sweep_batch_size, time.monotonic()
    for _ in range(deps.settings.sweep_max_batches):
        ended = await _sweep_batch(deps, size)
        swept += ended
        if ended < size:
            break
    seconds = time.monotonic() - started
    backlog = await expired_backlog(deps)
    if swept or backlog.holds:
        log_action(logger, "hold.swept", swept=swept, seconds=round(seconds, 3), backlog=backlog.holds,
                   oldest_seconds=round(backlog.oldest_seconds, 1))
    return swept


async def _sweep_batch(deps: Deps, size: int) -> int:
    """One statement's batch, committed, then the gate's keys of its holds (one Redis round trip)."""
    async with deps.uow() as uow:
        released = await uow.holds.sweep_expired(size)
        await uow.commit()
    await deps.admission.release_holds([(r.showtime_id, r.seats, r.hold_id) for r in released])
    return len(released)


async def expired_backlog(deps: Deps) -> Backlog:
    """The expired holds still HELD now, also set on the gauges ticketing_hold_expired_backlog_* (the alert
    ExpiredHoldsBacklog reads them)."""
    async with deps.statements() as uow:
        backlog = await uow.holds.expired_backlog()
    BACKLOG_HOLDS.set(backlog.holds)
    BACKLOG_OLDEST.set(backlog.oldest_seconds)
    return backlog


async def confirm_booking(cmd: ConfirmBooking, uow: HoldsUnitOfWork) -> str:
    """PaymentSucceeded, inside the consumer's transaction. Returns the outcome (for logs and tests)."""
    hold = await uow.holds.lock_by_booking(cmd.booking_id)
    if hold is None:
        log_action(logger, "hold.confirm_unknown_booking", booking_id=str(cmd.booking_id))
        return "unknown"
    if hold.status == "BOOKED" and hold.payment_id == cmd.payment_id:
        return "already_booked"
    if hold.status == "HELD" and await uow.holds.confirm(hold.hold_id, cmd.payment_id, cmd.paid_cents):
        log_action(logger, "hold.booked", hold_id=str(hold.hold_id), payment_id=str(cmd.payment_id))
        return "confirmed"
    reason = "HOLD_EXPIRED" if hold.status in ("HELD", "EXPIRED") else "HOLD_RELEASED"
    if hold.status in ("HELD", "EXPIRED"):  # its time passed, or its showtime was cancelled: end it now
        released = await uow.holds.release(hold.hold_id, "SHOWTIME_CANCELLED")  # EXPIRED if its time passed
        if released is not None and released.reason == "SHOWTIME_CANCELLED":
            reason = "HOLD_RELEASED"
    # Released, expired, or booked by another payment: this payment cannot be honoured; payment-service
    # refunds it on BookingFailed.
    await uow.holds.emit(events.booking_failed(hold, cmd.payment_id, reason))
    log_action(logger, "hold.booking_failed", hold_id=str(hold.hold_id), reason=reason)
    return reason
