"""`start_checkout`: the hold, the voucher, a PENDING payment, the gateway session.

Crash safety (the order matters):
1. the Idempotency-Key is claimed with a new paymentId BEFORE anything else; a retry with the key resumes
   that payment;
2. the voucher use is reserved with orderId = paymentId (idempotent at voucher-service: a retry reserves
   nothing more; a use reserved for a payment that is never recorded is released by voucher-service's
   expiry, which asks us and hears 404);
3. the PENDING payment commits BEFORE the gateway is called; the gateway deduplicates sessions on the
   reference = paymentId;
4. the session id and CheckoutStarted commit together.
If the process dies anywhere, the client's retry with the same key finds the key's paymentId and ends up
with the one session of that payment. A replay returns the recorded payment.

A new checkout of the same hold (a new key) first settles the hold's earlier attempts that are still open
at the gateway (a declined card whose callback has not arrived yet) and gives back the voucher uses of the
attempts that ended unpaid, so the customer can use the voucher again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import replace

from ticketing.events import booking_event
from ticketing.logs import log_action

from payment_service.domain import errors
from payment_service.domain.commands import StartCheckout
from payment_service.domain.model import Hold, Payment, charged_amount
from payment_service.service_layer.ports import Deps
from payment_service.service_layer.settlement import SOURCE, apply_gateway_state

logger = logging.getLogger(__name__)


def request_hash(cmd: StartCheckout) -> str:
    canonical = json.dumps({"holdId": str(cmd.hold_id), "voucherCode": cmd.voucher_code}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def start_checkout(cmd: StartCheckout, deps: Deps) -> Payment:
    """The payment, with its gateway session's URL."""
    digest = request_hash(cmd)
    payment_id = await _claim_key(cmd, digest, deps)
    async with deps.uow() as uow:
        recorded = await uow.payments.get(payment_id)
    if recorded is not None and recorded.session_id is not None:
        return recorded  # a replay: nothing else happens
    if recorded is not None and recorded.status != "PENDING":  # settled (expired) before it got a session
        raise errors.HoldNotActive(f"the payment is {recorded.status}")
    hold = await _active_hold(cmd, deps)
    if recorded is None:
        await _end_earlier_attempts(hold, deps)
        recorded = await _record_pending(cmd, payment_id, hold, deps)
    session = await deps.gateway.create_session(recorded, deps.settings.public_callback_url)
    return await _finish(replace(recorded, session_id=session.session_id, redirect_url=session.url), deps)


async def _claim_key(cmd: StartCheckout, digest: str, deps: Deps) -> uuid.UUID:
    async with deps.uow() as uow:
        if await uow.keys.claim(cmd.customer_id, cmd.idempotency_key, digest, fresh := uuid.uuid4()):
            await uow.commit()
            return fresh
        stored = await uow.keys.get(cmd.customer_id, cmd.idempotency_key)
    if stored is None or stored[0] != digest:
        raise errors.IdempotencyKeyReused(cmd.idempotency_key)
    return stored[1]


async def _active_hold(cmd: StartCheckout, deps: Deps) -> Hold:
    hold = await deps.holds.get(cmd.hold_id)
    if hold is None or hold.customer_id != cmd.customer_id:
        raise errors.HoldNotFound(str(cmd.hold_id))  # another customer's hold is "not found"
    if not hold.active:  # hold-service decides expiry with its clock; we do not second-guess it
        raise errors.HoldNotActive(f"hold is {hold.status}")
    return hold


async def _end_earlier_attempts(hold: Hold, deps: Deps) -> None:
    async with deps.uow() as uow:
        earlier = await uow.payments.of_hold(hold.hold_id)
    for attempt in earlier:
        if attempt.status == "PENDING" and attempt.session_id is not None:
            try:
                state = await deps.gateway.get_session(attempt.session_id)
            except errors.GatewayRejected:
                continue  # a gateway that forgot the session: the reconciler settles that attempt
            async with deps.uow() as uow:
                attempt = await apply_gateway_state(uow, attempt.payment_id, state) or attempt
                await uow.commit()
        if attempt.voucher_use_ended:
            await deps.vouchers.release(attempt.voucher_code or "", attempt.payment_id)


async def _record_pending(cmd: StartCheckout, payment_id: uuid.UUID, hold: Hold, deps: Deps) -> Payment:
    discount = 0
    if cmd.voucher_code:
        discount = await deps.vouchers.reserve(cmd.voucher_code, customer_id=cmd.customer_id, order_id=payment_id,
                                               order_amount=hold.amount_cents)
    amount, applied = charged_amount(hold.amount_cents, discount)
    draft = Payment(payment_id=payment_id, hold_id=hold.hold_id, booking_id=hold.booking_id,
                    customer_id=cmd.customer_id, showtime_id=hold.showtime_id, amount_cents=amount,
                    discount_cents=applied, voucher_code=cmd.voucher_code, status="PENDING",
                    expires_at=hold.expires_at)
    async with deps.uow() as uow:
        await uow.payments.add(draft, cmd.idempotency_key, deps.settings.payment_session_ttl_seconds,
                               hold.expires_at)
        payment = await uow.payments.get(payment_id)
        await uow.commit()
    if payment is None or payment.status != "PENDING":
        # Another attempt is live for this hold (the partial unique index said no): give the use back.
        if cmd.voucher_code:
            await deps.vouchers.release(cmd.voucher_code, payment_id)
        raise errors.HoldNotActive("a payment for this hold is already pending or done")
    return payment


async def _finish(payment: Payment, deps: Deps) -> Payment:
    async with deps.uow() as uow:
        first = await uow.payments.attach_session(payment.payment_id, payment.session_id or "",
                                                  payment.redirect_url or "")
        if first is not None:
            await uow.publish(checkout_started(payment))
        await uow.commit()
    if first:  # the hold ended while the session was being created: nobody may pay it
        await _cancel(payment, deps)
        raise errors.HoldNotActive("the hold ended during checkout")
    if first is not None:
        log_action(logger, "checkout.started", payment_id=str(payment.payment_id),
                   booking_id=str(payment.booking_id), session_id=payment.session_id)
    async with deps.uow() as uow:
        recorded = await uow.payments.get(payment.payment_id)
    assert recorded is not None
    return recorded


async def _cancel(payment: Payment, deps: Deps) -> None:
    state = await deps.gateway.cancel_session(payment.session_id or "")
    async with deps.uow() as uow:
        await apply_gateway_state(uow, payment.payment_id, state)
        await uow.commit()
    log_action(logger, "checkout.cancelled", payment_id=str(payment.payment_id), gateway_status=state.status)


def checkout_started(p: Payment) -> object:
    return booking_event("CheckoutStarted", source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id,
                         data={"paymentId": p.payment_id, "amountCents": p.amount_cents,
                               "discountCents": p.discount_cents, "voucherCode": p.voucher_code,
                               "expiresAt": p.expires_at})
