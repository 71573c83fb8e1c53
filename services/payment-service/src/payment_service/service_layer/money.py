"""The money reconciler: every payment the gateway reports paid ends in a booking or in a refund.

Three passes, safe to run in several workers at once (every change is a conditional UPDATE, refunds are
leased, and the gateway's refund is idempotent on the payment id):
- pending: PENDING payments whose session's time is over (at the next pass: the hold outlives the session
  only by PAYMENT_CONFIRM_GRACE_SECONDS, so a payment accepted at the last second must be settled, and
  booked, within that grace even when its callback is lost), older than RECONCILE_AFTER_SECONDS (the
  callback never came), or whose hold ended (cancel requested), are looked up, or cancelled, at the gateway
  and settled as a callback would settle them; one that never got a session is expired once its time is
  over (nobody can pay it). A gateway that cannot be reached fails the run (the job's metrics count it)
  after the refunds and the report.
- refunds: money due back is refunded, retried with exponential backoff for as long as the gateway
  refuses or is down; REFUNDED and RefundIssued commit together.
- report: refunds due for longer than REFUND_ALERT_SECONDS and payments paid that long ago with neither a
  booking nor a refund are counted in metrics and logged at ERROR (action=money.unresolved): a human acts.
"""

from __future__ import annotations

import logging

from prometheus_client import Counter, Gauge
from ticketing.logs import log_action

from payment_service.domain.errors import DependencyUnavailable, GatewayRejected
from payment_service.domain.model import Payment, refund_backoff
from payment_service.service_layer.ports import Deps, GatewayState, Pending, Unresolved
from payment_service.service_layer.settlement import apply_gateway_state, refund_issued

logger = logging.getLogger(__name__)
REFUND_LEASE_SECONDS = 60.0
REFUNDS = Counter("ticketing_payment_refunds_total", "Refund attempts at the gateway", ["outcome"])
UNRESOLVED = Gauge("ticketing_payment_money_unresolved", "Money an operator must look at", ["kind"])


async def reconcile(deps: Deps) -> Unresolved:
    outage: DependencyUnavailable | None = None
    try:
        await settle_pending(deps)
    except DependencyUnavailable as exc:
        outage = exc
    await issue_refunds(deps)
    found = await report_unresolved(deps)
    if outage is not None:
        raise outage
    return found


async def settle_pending(deps: Deps) -> int:
    """Returns how many payments were settled; raises DependencyUnavailable when the gateway could not be
    asked (what was settled before stays settled)."""
    async with deps.uow() as uow:
        candidates = await uow.payments.pending_to_reconcile(deps.settings.reconcile_after_seconds)
    settled = 0
    for pending in candidates:
        try:
            state = await _gateway_state(pending, deps)
        except DependencyUnavailable as exc:
            log_action(logger, "reconcile.gateway_down", str(exc), level=logging.WARNING, settled=settled,
                       candidates=len(candidates))
            raise
        if state is None:
            continue
        async with deps.uow() as uow:
            settled += await apply_gateway_state(uow, pending.payment.payment_id, state) is not None
            await uow.commit()
    if candidates:
        log_action(logger, "reconcile.pass", candidates=len(candidates), settled=settled)
    return settled


async def _gateway_state(pending: Pending, deps: Deps) -> GatewayState | None:
    payment = pending.payment
    expired = GatewayState(session_id=payment.session_id or "", status="expired", amount_cents=payment.amount_cents)
    if payment.session_id is None:
        # The checkout died before the customer got a URL. Once its hold ended (a cancel was asked) or its session
        # time is over, nobody can pay: a retry of the checkout finds the hold ended, and a checkout still
        # creating the session cancels it when it records it (checkout._finish).
        return expired if pending.past or pending.cancel_requested else None
    try:
        if pending.cancel_requested or pending.past:
            # Its hold ended, or our session's time is over while the provider's session (30 minutes at least
            # at Stripe) is still open: we end it, asking again at each pass until the provider answers.
            return await deps.gateway.cancel_session(payment.session_id)
        return await deps.gateway.get_session(payment.session_id)
    except GatewayRejected:
        # The gateway does not know the session (the in-memory simulator restarted). Past its expiry
        # nobody can pay it any more, so it is expired; before that, wait.
        log_action(logger, "reconcile.unknown_session", level=logging.WARNING,
                   payment_id=str(payment.payment_id), session_id=payment.session_id)
        return expired if pending.past else None


async def issue_refunds(deps: Deps, batch: int = 100) -> int:
    """Refund what is due now; returns how many the gateway accepted."""
    async with deps.uow() as uow:
        due = await uow.payments.claim_refunds(batch, REFUND_LEASE_SECONDS)
        await uow.commit()
    done = 0
    for payment in due:
        done += await _refund(payment, deps)
    return done


async def _refund(payment: Payment, deps: Deps) -> bool:
    try:
        refund_id = await deps.gateway.refund(payment.session_id or "", payment.payment_id, payment.amount_cents)
    except (DependencyUnavailable, GatewayRejected) as exc:
        REFUNDS.labels("failed").inc()
        attempts = payment.refund_attempts + 1
        retry_in = refund_backoff(attempts, deps.settings.refund_retry_first_seconds,
                                  deps.settings.refund_retry_max_seconds)
        async with deps.uow() as uow:
            await uow.payments.refund_failed(payment.payment_id, retry_in, str(exc)[:500])
            await uow.commit()
        log_action(logger, "refund.failed", str(exc), level=logging.WARNING, payment_id=str(payment.payment_id),
                   attempts=attempts, retry_in=retry_in)
        return False
    async with deps.uow() as uow:
        refunded = await uow.payments.mark_refunded(payment.payment_id, refund_id)
        if refunded is not None:
            await uow.publish(refund_issued(refunded, refund_id))
        await uow.commit()
    REFUNDS.labels("issued").inc()
    log_action(logger, "refund.issued", payment_id=str(payment.payment_id), refund_id=refund_id,
               reason=payment.refund_reason)
    return True


async def report_unresolved(deps: Deps) -> Unresolved:
    async with deps.uow() as uow:
        found = await uow.payments.unresolved(deps.settings.refund_alert_seconds)
    UNRESOLVED.labels("refunds_pending").set(found.refunds_pending)
    UNRESOLVED.labels("refunds_overdue").set(found.refunds_overdue)
    UNRESOLVED.labels("paid_unbooked").set(found.paid_unbooked)
    if found.refunds_overdue or found.paid_unbooked:
        log_action(logger, "money.unresolved", "paid money is neither booked nor refunded in time",
                   level=logging.ERROR, refunds_overdue=found.refunds_overdue, paid_unbooked=found.paid_unbooked,
                   oldest_refund_due=found.oldest_refund_due.isoformat() if found.oldest_refund_due else None)
    return found
