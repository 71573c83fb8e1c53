"""`handle_callback`: a verified gateway callback, de-duplicated by event id, settled by session state."""

from __future__ import annotations

import logging
import uuid

from ticketing.logs import log_action

from payment_service.adapters.repository import PaymentRepository
from payment_service.domain.commands import GatewayCallback
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import Gateway
from payment_service.service_layer.settlement import apply_gateway_state
from payment_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


async def handle_callback(cmd: GatewayCallback, uow: UnitOfWork, gateway: Gateway) -> str:
    """Returns "duplicate", "unknown", "pending" or "applied"; every one of them is a 200 for the gateway."""
    async with uow.read() as tx:
        if await tx.callbacks.seen(cmd.event_id):  # cheap early exit for replays, no gateway call
            return "duplicate"
        payment = await _payment(tx.payments, cmd.reference)
    if payment is None or payment.session_id not in (None, cmd.session_id):
        log_action(logger, "callback.unknown_payment", event_id=cmd.event_id, reference=cmd.reference)
        async with uow.begin() as tx:
            await tx.callbacks.record(cmd.event_id, cmd.event_type, cmd.session_id)
        return "unknown"
    # Raises DependencyUnavailable when the gateway is down -> 503 -> the gateway retries later.
    state = await gateway.get_session(cmd.session_id)
    if state.status == "open":
        # Not decided at the gateway yet; do not burn the event id, a retry or reconciliation settles it.
        return "pending"
    async with uow.begin() as tx:
        # The UNIQUE event id is the de-duplication: a concurrent replay blocks here, then sees the row.
        if not await tx.callbacks.record(cmd.event_id, cmd.event_type, cmd.session_id):
            return "duplicate"
        await apply_gateway_state(tx, payment.payment_id, state)
    return "applied"


async def _payment(payments: PaymentRepository, reference: str) -> Payment | None:
    try:
        payment_id = uuid.UUID(reference)
    except ValueError:
        return None
    return await payments.get(payment_id)
