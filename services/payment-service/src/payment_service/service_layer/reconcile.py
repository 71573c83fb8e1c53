"""Reconciliation: PENDING payments older than RECONCILE_AFTER_SECONDS are looked up at the gateway.

This is the answer to "the callback never arrives" (seed 000, section 8): the session's state is
applied exactly as a callback would apply it (paid -> PaymentSucceeded, and hold-service turns a late
one into BookingFailed -> refund; expired -> PaymentFailed{EXPIRED}). Safe to run in several workers
at once: every change is a conditional UPDATE from PENDING.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from ticketing.logs import log_action

from payment_service.domain.errors import GatewayRejected
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import Gateway, GatewayState
from payment_service.service_layer.settlement import apply_gateway_state
from payment_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


async def reconcile_pending(uow: UnitOfWork, gateway: Gateway, after_seconds: float) -> int:
    """Returns how many payments were settled."""
    async with uow.read() as tx:
        candidates = await tx.payments.pending_older_than(after_seconds)
    settled = 0
    for payment in candidates:
        state = await _gateway_state(payment, gateway)
        if state is None:
            continue
        async with uow.begin() as tx:
            settled += await apply_gateway_state(tx, payment.payment_id, state) is not None
    if candidates:
        log_action(logger, "reconcile.pass", candidates=len(candidates), settled=settled)
    return settled


async def _gateway_state(payment: Payment, gateway: Gateway) -> GatewayState | None:
    if payment.session_id is None:
        # Checkout died before the customer got a URL; once its session time is over, nobody can pay it.
        if payment.expires_at <= datetime.now(UTC):
            return GatewayState(session_id="", status="expired", amount_cents=payment.amount_cents)
        return None
    try:
        return await gateway.get_session(payment.session_id)
    except GatewayRejected:
        # The gateway does not know the session (the in-memory simulator restarted). Past its expiry
        # nobody can pay it any more, so it is expired; before that, wait.
        log_action(logger, "reconcile.unknown_session", level=logging.WARNING,
                   payment_id=str(payment.payment_id), session_id=payment.session_id)
        if payment.expires_at <= datetime.now(UTC):
            return GatewayState(session_id=payment.session_id, status="expired",
                                amount_cents=payment.amount_cents)
        return None
