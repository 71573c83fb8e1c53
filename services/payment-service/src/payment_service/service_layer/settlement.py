"""Applying the gateway's session state to a payment: one path for callbacks, the checkout, the reconciler
and the reactions to hold-service's events.

Whatever made us look (a callback of either type, in any order, the reconciler, a SeatsReleased), the
gateway's *current* session state decides, through a conditional UPDATE from PENDING: a `failed` arriving
after `paid` finds the payment SUCCEEDED and changes nothing, and two concurrent appliers race on the row
so exactly one emits the event. One more case: the gateway says paid for a payment already settled as not
paid (say its hold was cancelled while the customer was paying). No booking can follow, so its money is
due back (the reconciler refunds it); PaymentSucceeded is not emitted, so nothing downstream books it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from ticketing.events import booking_event
from ticketing.logs import log_action

from payment_service.domain.model import Payment, outcome_of
from payment_service.service_layer.ports import GatewayState, PaymentsUnitOfWork

logger = logging.getLogger(__name__)
SOURCE = "payment-service"


async def apply_gateway_state(uow: PaymentsUnitOfWork, payment_id: uuid.UUID, state: GatewayState) -> Payment | None:
    """Returns the payment if this call settled it; None if it was decided before or is still open."""
    outcome = outcome_of(state.status)
    if outcome is None:
        return None
    payment = await uow.payments.settle(payment_id, outcome.status)
    if payment is not None:
        await uow.publish(_event(payment, outcome.event_type, outcome.reason))
        log_action(logger, "payment.settled", payment_id=str(payment_id), status=payment.status,
                   gateway_status=state.status)
        return payment
    if state.status == "paid" and (late := await uow.payments.paid_after_settlement(payment_id)) is not None:
        log_action(logger, "payment.paid_after_settlement", "the gateway took money for a payment settled as "
                   "not paid; it will be refunded", level=logging.WARNING, payment_id=str(payment_id),
                   status=late.status)
    return None


def _event(p: Payment, event_type: str, reason: str | None) -> Any:
    data: dict[str, Any] = {"paymentId": p.payment_id}
    if event_type == "PaymentSucceeded":
        data["amountCents"] = p.amount_cents
        data["currency"] = p.currency
    else:
        data["reason"] = reason
    return booking_event(event_type, source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id, data=data)


def refund_issued(p: Payment, refund_id: str) -> Any:
    return booking_event("RefundIssued", source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id,
                         data={"paymentId": p.payment_id, "amountCents": p.amount_cents, "refundId": refund_id,
                               "currency": p.currency})
