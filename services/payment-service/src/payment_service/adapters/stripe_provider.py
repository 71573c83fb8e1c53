"""The payment provider: Stripe Checkout through the official `stripe` SDK.

Its blocking methods (over a pooled httpx client), each call in a worker thread: measured beside the SDK's async
methods in one run (`make bench-checkout`), a checkout's p50 and p99 were lower this way, since the SDK's own work
then leaves the event loop free for the checkout's other requests.

One Checkout Session per payment (mode `payment`, one line item for the order at the server's amount and
currency, `client_reference_id` = paymentId, `metadata` paymentId and bookingId). Every create, expire and
refund carries an Idempotency-Key derived from our own ids, so a retried call never opens a second session
nor refunds twice. Stripe keeps a session open for at least 30 minutes, longer than ours: the reconciler
expires it at our session's end (`cancel_session`), asking again at each pass until Stripe answers.

A session's state for the saga (`GatewayState.status`): `paid` once `payment_status` is paid; `expired`
once Stripe expired it; `failed` when it completed unpaid and its PaymentIntent needs a new payment method
(an asynchronous payment that failed); otherwise `open` (the customer may still pay, or the bank decides).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import stripe

from payment_service.config import Settings
from payment_service.domain.errors import DependencyUnavailable, GatewayRejected
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import Gateway, GatewaySession, GatewayState

logging.getLogger("stripe").setLevel(logging.WARNING)  # the SDK logs two INFO lines per call; our access log says
_FAILED_INTENT = {"requires_payment_method", "canceled"}
_REJECTED = {400, 402, 404, 409}  # Stripe said no to this call; anything else is an outage (retried)


def session_state(session: Any) -> GatewayState:
    """The saga's view of a Checkout Session (with its PaymentIntent expanded, or its id only)."""
    intent = session.get("payment_intent")
    intent_status = intent.get("status") if isinstance(intent, dict) else None
    if session.get("payment_status") in ("paid", "no_payment_required"):
        status = "paid"
    elif session.get("status") == "expired":
        status = "expired"
    elif session.get("status") == "complete" and intent_status in _FAILED_INTENT:
        status = "failed"
    else:
        status = "open"
    return GatewayState(
        session_id=str(session["id"]), status=status, amount_cents=int(session.get("amount_total") or 0)
    )


def _intent_id(session: Any) -> str | None:
    intent = session.get("payment_intent")
    if isinstance(intent, dict):
        return str(intent["id"])
    return None if intent is None else str(intent)


class StripeGateway(Gateway):
    def __init__(self, settings: Settings, *, timeout: float) -> None:
        self.return_url = settings.checkout_return_url
        # Our own retries (the checkout's client, the reconciler) repeat a call with the same Idempotency-Key;
        # the SDK's one retry covers a connection dropped mid-call.
        self.client = stripe.StripeClient(
            settings.stripe_api_key,
            base_addresses={"api": settings.stripe_api_base} if settings.stripe_api_base else {},
            max_network_retries=1,
            http_client=stripe.HTTPXClient(timeout=timeout, allow_sync_methods=True),
        )

    def _return(self, payment: Payment, outcome: str) -> str:
        page = self.return_url.replace("{showtimeId}", str(payment.showtime_id))
        return f"{page}{'&' if '?' in page else '?'}checkout={outcome}&booking={payment.booking_id}"

    def session_params(self, payment: Payment) -> dict[str, Any]:
        """The Checkout Session of this payment, as the create call sends it."""
        ids = {"paymentId": str(payment.payment_id), "bookingId": str(payment.booking_id)}
        params: dict[str, Any] = {
            "mode": "payment",
            "client_reference_id": str(payment.payment_id),
            "metadata": ids,
            "line_items": [
                {
                    "quantity": 1,
                    "price_data": {
                        "currency": payment.currency.lower(),
                        "unit_amount": payment.amount_cents,
                        "product_data": {"name": f"Tickets, booking {payment.booking_id}"},
                    },
                }
            ],
            "payment_intent_data": {"metadata": ids},
            "success_url": self._return(payment, "success"),
            "cancel_url": self._return(payment, "cancelled"),
        }
        return params

    async def create_session(self, payment: Payment) -> GatewaySession:
        session = await self._call(
            self.client.v1.checkout.sessions.create,
            self.session_params(payment),
            f"checkout-{payment.payment_id}",
        )
        return GatewaySession(session_id=str(session["id"]), url=str(session["url"]))

    async def get_session(self, session_id: str) -> GatewayState:
        return session_state(await self._retrieve(session_id))

    async def cancel_session(self, session_id: str) -> GatewayState:
        """Expire the session now if it is still open; a session paid, completed or expired keeps its state."""
        try:
            session = await self._call(
                lambda params, options: self.client.v1.checkout.sessions.expire(session_id, params, options),
                {},
                f"expire-{session_id}",
            )
        except GatewayRejected:
            session = await self._retrieve(session_id)  # not open any more (or unknown: raises again)
            if session.get("status") == "open":
                raise
        return session_state(session)

    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        intent = _intent_id(await self._retrieve(session_id))
        if intent is None:
            raise GatewayRejected(f"session {session_id} has no PaymentIntent to refund")
        params = {"payment_intent": intent, "amount": amount_cents, "metadata": {"paymentId": str(payment_id)}}
        refund = await self._call(self.client.v1.refunds.create, params, f"refund-{payment_id}")
        return str(refund["id"])

    async def _retrieve(self, session_id: str) -> Any:
        return await self._call(
            lambda params, options: self.client.v1.checkout.sessions.retrieve(session_id, params, options),
            {"expand": ["payment_intent"]},
            None,
        )

    @staticmethod
    async def _call(method: Any, params: dict[str, Any], idempotency_key: str | None) -> Any:
        options = {"idempotency_key": idempotency_key} if idempotency_key else {}
        try:
            # plain dicts: StripeObject is not one
            return await asyncio.to_thread(lambda: method(params, options).to_dict())
        except stripe.StripeError as exc:
            status = exc.http_status
            if status in _REJECTED:
                raise GatewayRejected(f"stripe answered {status}: {exc.user_message or exc}") from exc
            raise DependencyUnavailable(f"stripe: {type(exc).__name__} {status or ''}".strip()) from exc
