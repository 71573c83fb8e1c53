"""The voucher use's part of the booking saga: who moves it, which event, what a late event does.

The voucher orderId is the paymentId: one use per payment attempt (docs/events).

    (none) --reserve (payment-service, POST .../reservations)-----------------------> RESERVED
    RESERVED --BookingConfirmed{paymentId} (hold-service) | POST .../confirm---------> CONFIRMED
    RESERVED --PaymentFailed{paymentId} | BookingFailed{paymentId} | DELETE ---------> RELEASED
    RESERVED --expiry, only once payment-service says the payment FAILED, EXPIRED,
               REFUNDED or never recorded it (service_layer/expiry.py)----------------> RELEASED
    RESERVED | CONFIRMED --BookingCancelled{paymentId} (hold-service) ---------------> RELEASED (cancelled)

Between RESERVED's two ends the first wins (a conditional UPDATE on status = 'RESERVED'). RELEASED is final.
CONFIRMED is final for everything but a cancellation: a booked booking cancelled by its customer or with its
showtime gives its voucher use back (used_count - 1, the customer's slot free again), exactly once (a
conditional UPDATE from RESERVED or CONFIRMED; a repeated or second cancellation finds RELEASED). A
cancellation is released whatever came before it: it may overtake the booking's BookingConfirmed (then the
late confirmation finds the use RELEASED and cancelled: logged as voucher.confirm_after_cancellation, not as
an alarm), and it stands over any outcome parked for a flash use not written yet.
The events come from two producers (payment-service, hold-service) in no guaranteed order, so a stale one
must never undo a later state:
- a release of a CONFIRMED use changes nothing (logged: voucher.release_after_confirm);
- a confirm of a RELEASED use does not resurrect it: its use may already be someone else's. That is a
  payment that took a discount the platform no longer counts, so it is logged at ERROR
  (voucher.confirm_after_release) for an operator;
- an event of another attempt names another order: attempt 1's PaymentFailed never touches attempt 2.
SeatsReleased names no payment and is not consumed: payment-service ends the hold's open attempt on it,
which yields PaymentFailed{EXPIRED} or (paid at that moment) PaymentSucceeded -> BookingFailed.
An outcome for an order Postgres does not hold yet (a flash reservation still in flight) is parked under the
order id, first outcome wins as above, and applied by the voucher-reserved writer when the use lands.
The writer and the outcomes of an order take turns (`take_turn`, a transaction lock per order): an outcome
that comes while the use's batch is being written waits for it and applies to the written use.
"""

from __future__ import annotations

import logging

from ticketing.logs import log_action

from voucher_service.domain import commands
from voucher_service.domain.errors import ReservationConfirmed, ReservationReleased
from voucher_service.service_layer import flash
from voucher_service.service_layer.ports import Deps, VouchersUnitOfWork
from voucher_service.service_layer.terms import voucher_terms

logger = logging.getLogger(__name__)


def confirm_after_release(order_id: str, code: str | None, cancelled: bool = False) -> ReservationReleased:
    if cancelled:  # the booking's confirmation came after its cancellation: late, and already undone
        log_action(logger, "voucher.confirm_after_cancellation", "a confirmation came after the booking's "
                   "cancellation released the use; ignored", order_id=order_id, code=code)
        return ReservationReleased(f"reservation {order_id} was released by its booking's cancellation")
    log_action(logger, "voucher.confirm_after_release",
               f"a payment confirmed voucher use {order_id} after the use was released: the discount was "
               "given without a use counted; check the payment and the voucher by hand",
               level=logging.ERROR, order_id=order_id, code=code)
    return ReservationReleased(f"reservation {order_id} was released (expired or cancelled)")


def release_after_confirm(order_id: str, code: str | None) -> ReservationConfirmed:
    log_action(logger, "voucher.release_after_confirm", "a release came after the use was confirmed; ignored",
               level=logging.WARNING, order_id=order_id, code=code)
    return ReservationConfirmed(f"reservation {order_id} is confirmed; it can no longer be released")


async def take_turn(deps: Deps, order_ids: list[str]) -> None:
    """Wait for the flash writer or another outcome of these orders, and make them wait until the caller's
    transaction (a consumer's: `deps.uow` joined to it) ends: what one wrote, the other then sees."""
    async with deps.uow() as uow:
        await uow.vouchers.lock_orders(order_ids)


async def park(uow: VouchersUnitOfWork, order_id: str, outcome: str) -> None:
    """Park an outcome for an order not written yet; the first one parked stands."""
    standing = await uow.vouchers.park_outcome(order_id, outcome)
    if standing == outcome:
        log_action(logger, "voucher.booking_outcome_parked", order_id=order_id, outcome=outcome)
    elif outcome == "CONFIRMED":
        confirm_after_release(order_id, None, cancelled=standing == "CANCELLED")
    elif standing == "CONFIRMED":
        release_after_confirm(order_id, None)


async def cancel_use(cmd: commands.CancelUse, deps: Deps) -> bool:
    """BookingCancelled: the cancelled booking's use, RESERVED or CONFIRMED, is RELEASED and given back to the
    voucher (and to the flash gate), once. False when Postgres holds no such use yet (a flash reservation in
    flight, or a booking without a voucher): CANCELLED is parked for the writer, over anything parked before."""
    await take_turn(deps, [cmd.order_id])
    async with deps.uow() as uow:
        found = await uow.vouchers.redemption(cmd.order_id)
        if found is None:
            await uow.vouchers.park_cancellation(cmd.order_id)
            await uow.commit()
            log_action(logger, "voucher.booking_outcome_parked", order_id=cmd.order_id, outcome="CANCELLED")
            return False
        if (code := await uow.vouchers.cancel(cmd.order_id)) is not None:
            await uow.vouchers.give_back(code)
        await uow.commit()
    if code is None:
        log_action(logger, "voucher.cancel_already_released", order_id=cmd.order_id, code=found.voucher_code,
                   cancelled_before=found.cancelled)
        return True
    if (await voucher_terms(code, deps)).flash_sale:
        await flash.give_back(code, cmd.order_id, deps)
    log_action(logger, "voucher.use_cancelled", order_id=cmd.order_id, code=code, was=found.status)
    return True
