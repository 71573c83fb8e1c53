"""`start_checkout`: the hold, the voucher, a PENDING payment, the hold extended, the gateway session.

Crash safety (the order matters):
1. the Idempotency-Key is claimed with a new paymentId BEFORE anything else; a retry with the key resumes
   that payment;
2. the voucher use is reserved with orderId = paymentId (idempotent at voucher-service: a retry reserves
   nothing more; a use reserved for a payment that is never recorded is released by voucher-service's
   expiry, which asks us and hears 404);
3. the PENDING payment commits BEFORE the gateway is called, with the session's end (domain/model.py,
   checkout_window); the gateway deduplicates sessions on the reference = paymentId;
4. the hold is extended to the session's end + PAYMENT_CONFIRM_GRACE_SECONDS BEFORE the session exists
   (idempotent: a retry extends again), so nobody can pay a session whose payment could outlive its hold;
   a hold that ended meanwhile expires the payment at once (nobody got a URL);
5. the session id and CheckoutStarted commit together.
If the process dies anywhere, the client's retry with the same key finds the key's paymentId and ends up
with the one session of that payment. A replay returns the recorded payment.

A new checkout of the same hold (a new key) first settles the hold's earlier attempts that are still open
at the gateway (a declined card whose callback has not arrived yet) and gives back the voucher uses of the
attempts that ended unpaid, so the customer can use the voucher again; a hold has at most
MAX_CHECKOUTS_PER_HOLD attempts (then CHECKOUT_LIMIT).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import replace
from datetime import datetime, timedelta

from ticketing.events import booking_event
from ticketing.logs import log_action

from payment_service.domain import errors
from payment_service.domain.commands import StartCheckout
from payment_service.domain.model import CheckoutWindow, Hold, Payment, charged_amount, checkout_window
from payment_service.service_layer.ports import Deps, GatewayState
from payment_service.service_layer.settlement import SOURCE, apply_gateway_state

logger = logging.getLogger(__name__)


def request_hash(cmd: StartCheckout) -> str:
    canonical = json.dumps({"holdId": str(cmd.hold_id), "voucherCode": cmd.voucher_code}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def start_checkout(cmd: StartCheckout, deps: Deps) -> Payment:
    """The payment, with its gateway session's URL."""
    digest = request_hash(cmd)
    payment_id = await _claim_key(cmd, digest, deps)
    async with deps.statements() as uow:
        recorded = await uow.payments.get(payment_id)
    if recorded is not None and recorded.session_id is not None:
        return recorded  # a replay: nothing else happens
    if recorded is not None and recorded.status != "PENDING":  # settled (expired) before it got a session
        raise errors.HoldNotActive(f"the payment is {recorded.status}")
    hold = await _active_hold(cmd, deps)
    if recorded is None:
        attempts = await _end_earlier_attempts(hold, deps)
        if len(attempts) >= deps.settings.max_checkouts_per_hold:
            raise errors.CheckoutLimit(_LIMIT.format(len(attempts)))
        recorded = await _record_pending(cmd, payment_id, hold, _window(hold, deps).session_ends_at, deps)
    await _keep_hold_for(recorded, deps)
    session = await deps.gateway.create_session(recorded)
    return await _finish(replace(recorded, session_id=session.session_id, redirect_url=session.url), deps)


async def _claim_key(cmd: StartCheckout, digest: str, deps: Deps) -> uuid.UUID:
    async with deps.statements() as uow:  # committed at once: a twin with the same key sees it
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


_LIMIT = "this hold had {} payment attempts, the most it may have: hold the seats again to try once more"
_TOO_LATE = ("too little of this hold's time is left to pay; release it and hold the seats again "
             "(a new hold gives you a new payment window)")


def _window(hold: Hold, deps: Deps) -> CheckoutWindow:
    s = deps.settings
    window = checkout_window(hold, deps.clock(), session_seconds=s.payment_session_ttl_seconds,
                             hold_max_seconds=s.hold_max_seconds, grace_seconds=s.payment_confirm_grace_seconds,
                             min_session_seconds=s.payment_min_session_seconds)
    if window is None:
        raise errors.HoldNotActive(_TOO_LATE)
    return window


async def _keep_hold_for(payment: Payment, deps: Deps) -> None:
    """The hold lasts to the session's end + the grace; a hold that ended meanwhile (hold-service says 409)
    ends the payment: EXPIRED at once (nobody has its URL), PaymentFailed gives the voucher use back."""
    until = payment.expires_at + timedelta(seconds=deps.settings.payment_confirm_grace_seconds)
    try:
        await deps.holds.extend(payment.hold_id, payment.customer_id, until)
    except errors.HoldNotActive:
        expired = GatewayState(session_id="", status="expired", amount_cents=payment.amount_cents)
        async with deps.uow() as uow:
            await apply_gateway_state(uow, payment.payment_id, expired)
            await uow.commit()
        raise


async def _end_earlier_attempts(hold: Hold, deps: Deps) -> list[Payment]:
    """The hold's earlier attempts, settled with the gateway where still open; their unpaid uses given back."""
    async with deps.statements() as uow:
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
    return earlier


async def _record_pending(cmd: StartCheckout, payment_id: uuid.UUID, hold: Hold, session_ends_at: datetime,
                          deps: Deps) -> Payment:
    discount = 0
    if cmd.voucher_code:
        discount = await deps.vouchers.reserve(cmd.voucher_code, customer_id=cmd.customer_id, order_id=payment_id,
                                               order_amount=hold.amount_cents)
    amount, applied = charged_amount(hold.amount_cents, discount)
    draft = Payment(payment_id=payment_id, hold_id=hold.hold_id, booking_id=hold.booking_id,
                    customer_id=cmd.customer_id, showtime_id=hold.showtime_id, amount_cents=amount,
                    discount_cents=applied, voucher_code=cmd.voucher_code, status="PENDING",
                    expires_at=session_ends_at, currency=(hold.currency or deps.settings.currency).upper())
    limit = deps.settings.max_checkouts_per_hold
    async with deps.uow() as uow:
        await uow.payments.add(draft, cmd.idempotency_key, limit)
        payment = await uow.payments.get(payment_id)
        attempts = len(await uow.payments.of_hold(hold.hold_id))
        await uow.commit()
    if payment is None or payment.status != "PENDING":
        # Another attempt is live for this hold (the partial unique index said no), or a concurrent checkout
        # took the last attempt: give the use back.
        if cmd.voucher_code:
            await deps.vouchers.release(cmd.voucher_code, payment_id)
        if payment is None and attempts >= limit:
            raise errors.CheckoutLimit(_LIMIT.format(attempts))
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
    async with deps.statements() as uow:
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
                               "expiresAt": p.expires_at, "currency": p.currency})
