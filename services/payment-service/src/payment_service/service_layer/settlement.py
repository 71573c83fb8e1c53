"""Applying the gateway's session state to a payment: one path for callbacks, reconciliation and cancels.

Whatever message made us look (a callback of either type, in any order, the reconciliation job, a
SeatsReleased), the gateway's *current* session state decides, through a conditional UPDATE from
PENDING. A `failed` arriving after `paid` finds the payment SUCCEEDED and changes nothing; two
concurrent appliers race on the row and exactly one emits the event.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from ticketing.events import booking_event
from ticketing.logs import log_action

from payment_service.domain.model import Payment, outcome_of
from payment_service.service_layer.checkout import SOURCE
from payment_service.service_layer.ports import GatewayState
from payment_service.service_layer.unit_of_work import Transaction

logger = logging.getLogger(__name__)


async def apply_gateway_state(tx: Transaction, payment_id: uuid.UUID, state: GatewayState) -> Payment | None:
    """Returns the payment if this call changed it; None if it was already decided or still open."""
    outcome = outcome_of(state.status)
    if outcome is None:
        return None
    payment = await tx.payments.transition(payment_id, outcome.status, ["PENDING"])
    if payment is None:
        return None
    await tx.publish(_event(payment, outcome.event_type, outcome.reason))
    log_action(logger, "payment.settled", payment_id=str(payment_id), status=payment.status,
               gateway_status=state.status)
    return payment


def _event(p: Payment, event_type: str, reason: str | None) -> Any:
    data: dict[str, Any] = {"paymentId": p.payment_id}
    if event_type == "PaymentSucceeded":
        data["amountCents"] = p.amount_cents
    else:
        data["reason"] = reason
    return booking_event(event_type, source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id, data=data)


def refund_issued(p: Payment, refund_id: str) -> Any:
    return booking_event("RefundIssued", source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id,
                         data={"paymentId": p.payment_id, "amountCents": p.amount_cents,
                               "refundId": refund_id})
