"""`handle_callback`: a verified provider event, de-duplicated by event id, settled by the session's state.

Checkout Session events are settled by the session's current state at the provider (never the event's type
or order). Refund events confirm a refund: a payment whose refund is due becomes REFUNDED with its
RefundIssued, once. Other types are acknowledged and change nothing.
"""

from __future__ import annotations

import logging
import uuid

from ticketing.logs import log_action

from payment_service.domain.commands import GatewayCallback
from payment_service.domain.errors import GatewayRejected
from payment_service.service_layer.ports import Deps
from payment_service.service_layer.settlement import apply_gateway_state, refund_issued

logger = logging.getLogger(__name__)


async def handle_callback(cmd: GatewayCallback, deps: Deps) -> str:
    """Returns "ignored", "duplicate", "unknown", "pending" or "applied"; every one of them is a 200 for the
    provider. Raises DependencyUnavailable (503: the provider retries) when the provider cannot be asked."""
    if cmd.ignored:
        return "ignored"
    if cmd.refund_id:
        return await _refund_event(cmd, deps)
    async with deps.statements() as uow:
        if await uow.callbacks.seen(cmd.event_id):  # cheap early exit for replays, no gateway call
            return "duplicate"
        payment_id = _uuid(cmd.reference)
        payment = None if payment_id is None else await uow.payments.get(payment_id)
    if payment is None or payment.session_id not in (None, cmd.session_id):
        log_action(logger, "callback.unknown_payment", event_id=cmd.event_id, reference=cmd.reference)
        async with deps.uow() as uow:
            await uow.callbacks.record(cmd.event_id, cmd.event_type, cmd.session_id)
            await uow.commit()
        return "unknown"
    try:
        state = await deps.gateway.get_session(cmd.session_id)
    except GatewayRejected:
        # The gateway does not know the session it called about (a gateway that lost its state). Not
        # recorded: a later delivery is looked at again; the reconciler settles the payment meanwhile.
        log_action(logger, "callback.unknown_session", level=logging.WARNING, event_id=cmd.event_id,
                   session_id=cmd.session_id)
        return "unknown"
    if state.status == "open":
        # Not decided at the gateway yet; do not burn the event id, a retry or the reconciler settles it.
        return "pending"
    async with deps.uow() as uow:
        # The UNIQUE event id is the de-duplication: a concurrent replay blocks here, then sees the row.
        if not await uow.callbacks.record(cmd.event_id, cmd.event_type, cmd.session_id):
            return "duplicate"
        await apply_gateway_state(uow, payment.payment_id, state)
        await uow.commit()
    return "applied"


async def _refund_event(cmd: GatewayCallback, deps: Deps) -> str:
    payment_id = _uuid(cmd.reference)
    async with deps.uow() as uow:
        if not await uow.callbacks.record(cmd.event_id, cmd.event_type, cmd.refund_id):
            return "duplicate"
        refunded = None
        if payment_id is not None and cmd.refund_status == "succeeded":
            refunded = await uow.payments.mark_refunded(payment_id, cmd.refund_id)
            if refunded is not None:  # the refund call's answer was lost; the event says it was made
                await uow.publish(refund_issued(refunded, cmd.refund_id))
        await uow.commit()
    log_action(logger, "callback.refund", event_id=cmd.event_id, refund_id=cmd.refund_id,
               status=cmd.refund_status, payment_id=cmd.reference, applied=refunded is not None)
    return "applied" if refunded is not None else "unknown"


def _uuid(reference: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(reference)
    except ValueError:
        return None
