"""Cancellations: a customer's booking, before the deadline, and a whole showtime by an operator.

Postgres decides each one under the booking's lock (cancel_booking, release_hold: sql/schema.sql) and records
it with its event in the same transaction: BookingCancelled (payment-service refunds the whole payment once,
voucher-service gives the use back, the notifier writes once), SeatsReleased{SHOWTIME_CANCELLED} for a live
hold. A showtime is cancelled first (from then on no hold or booking of it can be written), then its holds
and bookings are ended one short transaction each, pass after pass until none is left; what an interrupted
call left is finished by the sweeper (finish_cancelled_showtimes) or an operator's repeat.
"""

from __future__ import annotations

import logging
import uuid

from ticketing.logs import log_action

from hold_service.domain.commands import CancelBooking, CancelShowtime
from hold_service.domain.errors import CancellationClosed, HoldNotActive, HoldNotFound, ShowtimeNotFound
from hold_service.service_layer import events
from hold_service.service_layer.ports import Cancellation, Deps

logger = logging.getLogger(__name__)
PASS_SIZE = 500  # holds and bookings read per pass
MAX_PASSES = 20


async def cancel_booking(cmd: CancelBooking, deps: Deps) -> Cancellation:
    """The owner's cancellation: idempotent (a cancelled booking answers as before); another customer's
    booking is not found; too late: CancellationClosed; not booked (yet, or any more): HoldNotActive."""
    async with deps.uow() as uow:
        hold = await uow.holds.lock_by_booking(cmd.booking_id)
        if hold is None or not hold.visible_to(cmd.customer_id):
            raise HoldNotFound(str(cmd.booking_id))
        done = await uow.holds.cancel_booking(cmd.booking_id, "CUSTOMER", deps.settings.cancellation_deadline_minutes)
        await uow.commit()
    if done.outcome == "TOO_LATE":
        raise CancellationClosed(f"bookings can be cancelled until {deps.settings.cancellation_deadline_minutes:g} "
                                 "minutes before the start")
    if done.outcome == "NOT_BOOKED":
        raise HoldNotActive(f"the booking is {hold.status}, not booked: a hold is released with DELETE /holds/{{id}}")
    if done.outcome == "CANCELLED":
        await _cancelled(done, "CUSTOMER", deps)
    return done


async def cancel_showtime(cmd: CancelShowtime, deps: Deps) -> int:
    """Cancel the showtime, then every live hold and booking of it. Returns how many this call ended."""
    async with deps.uow() as uow:
        now = await uow.holds.cancel_showtime(cmd.showtime_id, cmd.reason)
        if now is None:
            raise ShowtimeNotFound(f"showtime {cmd.showtime_id}")
        if now:
            await uow.holds.emit(events.showtime_cancelled(cmd.showtime_id, cmd.reason))
        await uow.commit()
    if now:
        log_action(logger, "showtime.cancelled", showtime_id=cmd.showtime_id, reason=cmd.reason)
    return await _end_live(cmd.showtime_id, deps)


async def finish_cancelled_showtimes(deps: Deps) -> int:
    """The sweeper's: the holds and bookings left on cancelled showtimes (the operator's call ended before it
    ended them all: a crash, a restart) are ended now. Returns how many."""
    async with deps.uow() as uow:
        showtimes = await uow.holds.cancelled_with_live(10)
    return sum([await _end_live(showtime_id, deps) for showtime_id in showtimes])


async def _end_live(showtime_id: int, deps: Deps) -> int:
    ended = 0
    for _ in range(MAX_PASSES):
        async with deps.uow() as uow:
            live = await uow.holds.live_of_showtime(showtime_id, PASS_SIZE)
        if not live:
            break
        for hold_id, booking_id, status in live:
            ended += await _end(hold_id, booking_id, status, deps)
    log_action(logger, "showtime.cancellation_done", showtime_id=showtime_id, ended=ended)
    return ended


async def _end(hold_id: uuid.UUID, booking_id: uuid.UUID, status: str, deps: Deps) -> int:
    """One hold released or one booking cancelled, in its own transaction (what another path ended
    meanwhile is left as it is)."""
    async with deps.uow() as uow:
        if status == "HELD":
            released = await uow.holds.release(hold_id, "SHOWTIME_CANCELLED")
            await uow.commit()
            if released is not None:
                await deps.admission.release(released.showtime_id, released.seats, released.hold_id)
            return int(released is not None)
        done = await uow.holds.cancel_booking(booking_id, "SHOWTIME_CANCELLED", 0)
        await uow.commit()
    if done.outcome == "CANCELLED":
        await _cancelled(done, "SHOWTIME_CANCELLED", deps)
    return int(done.outcome == "CANCELLED")


async def _cancelled(done: Cancellation, reason: str, deps: Deps) -> None:
    """The seats go back on sale in the Redis gate too (Postgres already has them AVAILABLE)."""
    log_action(logger, "booking.cancelled", hold_id=str(done.hold_id), reason=reason)
    assert done.showtime_id is not None and done.hold_id is not None
    await deps.admission.release(done.showtime_id, done.seats, done.hold_id)
