"""Reactions to hold-service's events, run inside the idempotent consumer's transaction.

- BookingFailed: the customer paid but the seats could not be booked -> refund at the gateway with
  idempotency key = paymentId (a redelivery after a crash asks again and gets the same refund id),
  then REFUNDED and RefundIssued in the same transaction as the inbox row.
- SeatsReleased: the hold is gone -> cancel its open gateway session so nobody pays for nothing; the
  gateway's answer is applied like any callback (usually expired -> PaymentFailed{EXPIRED}; if the
  customer paid a moment earlier it is paid -> PaymentSucceeded, then hold-service fails the booking
  and the refund path above runs).
"""

from __future__ import annotations

import logging

from ticketing.events import BookingFailed, SeatsReleased
from ticketing.logs import log_action

from payment_service.domain.errors import GatewayRejected
from payment_service.service_layer.ports import Gateway
from payment_service.service_layer.settlement import apply_gateway_state, refund_issued
from payment_service.service_layer.unit_of_work import Transaction

logger = logging.getLogger(__name__)


async def refund_failed_booking(event: BookingFailed, tx: Transaction, gateway: Gateway) -> None:
    payment = await tx.payments.get(event.data.paymentId, lock=True)
    if payment is None or payment.status != "SUCCEEDED" or payment.session_id is None:
        # Not ours (shared topics), or already refunded: nothing to do.
        log_action(logger, "refund.skipped", payment_id=str(event.data.paymentId),
                   status=None if payment is None else payment.status)
        return
    refund_id = await gateway.refund(payment.session_id, payment.payment_id, payment.amount_cents)
    refunded = await tx.payments.mark_refunded(payment.payment_id, refund_id)
    if refunded is not None:
        await tx.publish(refund_issued(refunded, refund_id))
        log_action(logger, "refund.issued", payment_id=str(payment.payment_id), refund_id=refund_id,
                   reason=event.data.reason)


async def cancel_released_hold(event: SeatsReleased, tx: Transaction, gateway: Gateway) -> None:
    payment = await tx.payments.live_of_hold(event.data.holdId)
    if payment is None or payment.status != "PENDING":
        return
    if payment.session_id is None:
        # The customer never got a pay URL (checkout interrupted); nothing can be paid.
        await tx.payments.transition(payment.payment_id, "EXPIRED", ["PENDING"])
        return
    try:
        state = await gateway.cancel_session(payment.session_id)
    except GatewayRejected:
        state = await gateway.get_session(payment.session_id)
    await apply_gateway_state(tx, payment.payment_id, state)
    log_action(logger, "checkout.cancelled", payment_id=str(payment.payment_id), gateway_status=state.status)
