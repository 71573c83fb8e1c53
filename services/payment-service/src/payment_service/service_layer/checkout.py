"""`start_checkout`: hold check, voucher, PENDING row, gateway session, stored response.

Crash safety (the order matters):
1. the idempotency key and a PENDING payment (new paymentId, fixed session expiry) commit together
   BEFORE the gateway is called;
2. the gateway session is created with reference = Idempotency-Key = paymentId, and the gateway
   deduplicates on it;
3. the session id, the stored response and CheckoutStarted commit together.
If the process dies between 2 and 3, the client's retry with the same key finds the key row from step
1, reuses its paymentId, and the gateway hands back the session it already made: one session, not two.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ticketing.events import booking_event
from ticketing.logs import log_action

from payment_service.domain import errors
from payment_service.domain.commands import StartCheckout
from payment_service.domain.model import Hold, Payment, charged_amount, session_expiry
from payment_service.service_layer.ports import Gateway, HoldDirectory, Vouchers
from payment_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)
SOURCE = "payment-service"


@dataclass(frozen=True)
class CheckoutDeps:
    uow: UnitOfWork
    holds: HoldDirectory
    vouchers: Vouchers
    gateway: Gateway
    callback_url: str
    session_ttl_seconds: int
    exit_after_gateway_call: bool = False  # fault hook (tests only)


def request_hash(cmd: StartCheckout) -> str:
    canonical = json.dumps({"holdId": str(cmd.hold_id), "voucherCode": cmd.voucher_code}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def start_checkout(cmd: StartCheckout, deps: CheckoutDeps) -> dict[str, Any]:
    digest = request_hash(cmd)
    async with deps.uow.read() as tx:
        stored = await tx.keys.get(cmd.customer_id, cmd.idempotency_key)
    if stored is not None:
        if stored["request_hash"] != digest:
            raise errors.IdempotencyKeyReused(cmd.idempotency_key)
        if stored["response_body"] is not None:
            return dict(stored["response_body"])  # replay: nothing else happens
    hold = await _active_hold(cmd, deps.holds)
    discount = await _reserve_voucher(cmd, hold, deps.vouchers)
    payment = await _record_pending(cmd, digest, hold, discount, deps)
    session = await deps.gateway.create_session(payment, deps.callback_url, payment.expires_at)
    if deps.exit_after_gateway_call:
        log_action(logger, "checkout.fault_injected", "exiting between gateway call and database write")
        os._exit(87)
    return await _finish(cmd, replace(payment, session_id=session.session_id, redirect_url=session.url), deps)


async def _active_hold(cmd: StartCheckout, holds: HoldDirectory) -> Hold:
    hold = await holds.get(cmd.hold_id)
    if hold is None or hold.customer_id != cmd.customer_id:
        raise errors.HoldNotFound(str(cmd.hold_id))  # another customer's hold is "not found"
    if not hold.is_active(datetime.now(UTC)):
        raise errors.HoldNotActive(f"hold is {hold.status}")
    return hold


async def _reserve_voucher(cmd: StartCheckout, hold: Hold, vouchers: Vouchers) -> int:
    if not cmd.voucher_code:
        return 0
    # Idempotent at voucher-service on orderId = bookingId, so a retried checkout reserves once.
    return await vouchers.reserve(cmd.voucher_code, customer_id=cmd.customer_id, order_id=hold.booking_id,
                                  order_amount=hold.amount_cents)


async def _record_pending(cmd: StartCheckout, digest: str, hold: Hold, discount: int,
                          deps: CheckoutDeps) -> Payment:
    amount, applied = charged_amount(hold.amount_cents, discount)
    fresh = Payment(payment_id=uuid.uuid4(), hold_id=hold.hold_id, booking_id=hold.booking_id,
                    customer_id=cmd.customer_id, showtime_id=hold.showtime_id, amount_cents=amount,
                    discount_cents=applied, voucher_code=cmd.voucher_code, status="PENDING",
                    expires_at=session_expiry(datetime.now(UTC), deps.session_ttl_seconds, hold.expires_at))
    async with deps.uow.begin() as tx:
        if not await tx.keys.claim(cmd.customer_id, cmd.idempotency_key, digest, fresh.payment_id):
            stored = await tx.keys.get(cmd.customer_id, cmd.idempotency_key)
            if stored is None or stored["request_hash"] != digest:
                raise errors.IdempotencyKeyReused(cmd.idempotency_key)
            fresh = replace(fresh, payment_id=stored["payment_id"])  # resume the interrupted attempt
        await tx.payments.add(fresh, cmd.idempotency_key)
        payment = await tx.payments.get(fresh.payment_id)
        if payment is None or payment.status != "PENDING":
            # Another key's payment is live for this hold (the partial unique index said no).
            raise errors.HoldNotActive("a payment for this hold is already pending or done")
        return payment


async def _finish(cmd: StartCheckout, payment: Payment, deps: CheckoutDeps) -> dict[str, Any]:
    body = response_body(payment)
    async with deps.uow.begin() as tx:
        first = await tx.payments.attach_session(payment.payment_id, payment.session_id or "",
                                                 payment.redirect_url or "")
        if first:
            await tx.publish(checkout_started(payment))
            log_action(logger, "checkout.started", payment_id=str(payment.payment_id),
                       booking_id=str(payment.booking_id), session_id=payment.session_id)
        await tx.keys.store_response(cmd.customer_id, cmd.idempotency_key, 201, body)
    return body


def response_body(p: Payment) -> dict[str, Any]:
    return {"paymentId": str(p.payment_id), "bookingId": str(p.booking_id), "amountCents": p.amount_cents,
            "discountCents": p.discount_cents, "redirectUrl": p.redirect_url,
            "expiresAt": p.expires_at.astimezone(UTC).isoformat().replace("+00:00", "Z")}


def checkout_started(p: Payment) -> Any:
    return booking_event("CheckoutStarted", source=SOURCE, booking_id=p.booking_id, showtime_id=p.showtime_id,
                         customer_id=p.customer_id,
                         data={"paymentId": p.payment_id, "amountCents": p.amount_cents,
                               "discountCents": p.discount_cents, "voucherCode": p.voucher_code,
                               "expiresAt": p.expires_at})
