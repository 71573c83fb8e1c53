"""`POST /holds/{holdId}/checkout` and `GET /payments/{paymentId}`."""

from __future__ import annotations

import uuid
from datetime import UTC
from typing import Annotated

from fastapi import APIRouter, Header
from ticketing.api.errors import ApiError, not_found
from ticketing.api.security import Customer, CustomerOrService

from payment_service.domain.commands import StartCheckout
from payment_service.domain.errors import PaymentError
from payment_service.domain.model import Payment
from payment_service.entrypoints.api.deps import DepsDep
from payment_service.entrypoints.api.errors import to_api_error
from payment_service.entrypoints.api.schemas import CheckoutCreate, CheckoutPublic, PaymentPublic
from payment_service.service_layer.checkout import start_checkout

router = APIRouter(tags=["payments"])
CHECKOUT_PATH, PAYMENT_PATH = "/holds/{hold_id}/checkout", "/payments/{payment_id}"


def _iso(p: Payment) -> str:
    return p.expires_at.astimezone(UTC).isoformat().replace("+00:00", "Z")


@router.post(CHECKOUT_PATH, status_code=201, response_model=CheckoutPublic, name="checkout")
async def checkout(hold_id: uuid.UUID, principal: Customer, deps: DepsDep,
                   idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
                   body: CheckoutCreate | None = None) -> CheckoutPublic:
    if not idempotency_key:
        raise ApiError(422, "VALIDATION_ERROR", "the Idempotency-Key header is required")
    cmd = StartCheckout(hold_id=hold_id, customer_id=principal.customer_id, idempotency_key=idempotency_key,
                        voucher_code=body.voucherCode if body else None)
    try:
        p = await start_checkout(cmd, deps)
    except (PaymentError, ConnectionError) as exc:
        raise to_api_error(exc) from exc
    return CheckoutPublic(paymentId=str(p.payment_id), bookingId=str(p.booking_id), amountCents=p.amount_cents,
                          discountCents=p.discount_cents, redirectUrl=p.redirect_url, expiresAt=_iso(p))


@router.get(PAYMENT_PATH, response_model=PaymentPublic, name="get_payment")
async def get_payment(payment_id: uuid.UUID, principal: CustomerOrService, deps: DepsDep) -> PaymentPublic:
    """The owner, or another service (voucher-service asks before it lets a reserved use expire)."""
    async with deps.statements() as uow:
        p = await uow.payments.get(payment_id)
    if p is None or (principal.role != "service" and p.customer_id != principal.customer_id):
        raise not_found("payment")
    return PaymentPublic(paymentId=str(p.payment_id), bookingId=str(p.booking_id), holdId=str(p.hold_id),
                         status=p.status, amountCents=p.amount_cents, discountCents=p.discount_cents,
                         voucherCode=p.voucher_code, refundId=p.refund_id, expiresAt=_iso(p))
