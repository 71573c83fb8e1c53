"""Reactions to hold-service's events, inside the idempotent consumer's transaction (a joined unit of work).

- BookingFailed: the customer paid but the seats could not be booked: the money is due back. The refund
  itself is the reconciler's (money.py): a gateway that refuses or is down is retried with backoff,
  never parked in a DLQ.
- BookingConfirmed: the payment's booking is done (a state the reconciler's report counts on).
- BookingCancelled: the booking is cancelled (its customer, or with its showtime): its payment is refunded in
  full, once, by the same reconciler (retried with backoff while the gateway refuses). The event may come
  before or after the booking's BookingConfirmed, any number of times: only the first makes the refund due.
- SeatsReleased (CANCELLED, EXPIRED or SHOWTIME_CANCELLED): the hold is over: its PENDING payment must not
  be paid any more. Its session is cancelled at the gateway and the gateway's answer settles it like any
  callback (expired -> PaymentFailed{EXPIRED}, which releases the voucher use; if the customer paid a moment
  earlier, paid -> PaymentSucceeded, then hold-service's BookingFailed -> refund). A checkout still creating
  its session is asked to cancel it as soon as it has it; a gateway that cannot be reached now leaves that to
  the reconciler.
"""

from __future__ import annotations

import logging

from ticketing.logs import log_action

from payment_service.domain.commands import (
    EndPaymentOfReleasedHold,
    RecordBooking,
    RefundCancelledBooking,
    RefundFailedBooking,
)
from payment_service.domain.errors import DependencyUnavailable, GatewayRejected
from payment_service.domain.model import CANCELLATION_REFUNDS
from payment_service.service_layer.ports import Gateway, GatewayState, PaymentsUnitOfWork
from payment_service.service_layer.settlement import apply_gateway_state

logger = logging.getLogger(__name__)


async def refund_failed_booking(cmd: RefundFailedBooking, uow: PaymentsUnitOfWork) -> None:
    due = await uow.payments.refund_due(cmd.payment_id, cmd.reason)
    log_action(logger, "refund.due" if due else "refund.not_due", payment_id=str(cmd.payment_id),
               reason=cmd.reason)


async def refund_cancelled_booking(cmd: RefundCancelledBooking, uow: PaymentsUnitOfWork) -> None:
    due = await uow.payments.refund_cancelled(cmd.payment_id, CANCELLATION_REFUNDS[cmd.reason])
    if due is not None:
        log_action(logger, "refund.due", payment_id=str(cmd.payment_id), reason=due.refund_reason,
                   amount_cents=due.amount_cents)
        return
    payment = await uow.payments.get(cmd.payment_id)
    if payment is None or payment.status in ("PENDING", "FAILED", "EXPIRED"):
        # A cancelled booking was paid: payment-service never recorded its payment as paid. An operator looks.
        log_action(logger, "refund.cancelled_but_unpaid", "a cancelled booking's payment is not paid here",
                   level=logging.ERROR, payment_id=str(cmd.payment_id),
                   status=None if payment is None else payment.status)
        return
    log_action(logger, "refund.not_due", "refunded or due already", payment_id=str(cmd.payment_id),
               reason=payment.refund_reason, status=payment.status)


async def record_booking(cmd: RecordBooking, uow: PaymentsUnitOfWork) -> None:
    if await uow.payments.booking_confirmed(cmd.payment_id) is None:
        payment = await uow.payments.get(cmd.payment_id)
        if payment is not None and payment.refund_reason is not None and not payment.refunded_for_cancellation:
            # A booking for money that is being given back: the saga's rules make this impossible; an
            # operator must look (the seat is sold and the customer refunded).
            log_action(logger, "payment.booked_but_refunded", level=logging.ERROR,
                       payment_id=str(cmd.payment_id), refund_reason=payment.refund_reason)


async def end_payment_of_released_hold(cmd: EndPaymentOfReleasedHold, uow: PaymentsUnitOfWork,
                                       gateway: Gateway) -> None:
    payment = await uow.payments.lock_pending_of_hold(cmd.hold_id)
    if payment is None:
        return
    _, session_id = await uow.payments.request_cancel(payment.payment_id)
    if session_id is None:
        log_action(logger, "checkout.cancel_requested", payment_id=str(payment.payment_id))
        return  # the checkout cancels the session it is creating (checkout._finish)
    try:
        state = await _cancelled(gateway, session_id)
    except (DependencyUnavailable, GatewayRejected) as exc:
        # cancel_requested_at is set: the reconciler tries again. A gateway that does not know the session
        # (restarted) is no reason to fail the event: the reconciler expires the payment once its time is over.
        log_action(logger, "checkout.cancel_deferred", str(exc), level=logging.WARNING,
                   payment_id=str(payment.payment_id))
        return
    await apply_gateway_state(uow, payment.payment_id, state)
    log_action(logger, "checkout.cancelled", payment_id=str(payment.payment_id), gateway_status=state.status)


async def _cancelled(gateway: Gateway, session_id: str) -> GatewayState:
    """The session's state after a cancel; a gateway that refuses the cancel (a decided session) is asked."""
    try:
        return await gateway.cancel_session(session_id)
    except GatewayRejected:
        return await gateway.get_session(session_id)
