"""Checkout Sessions, PaymentIntents and Refunds kept in memory, in Stripe's shapes.

State lives in this process only: restarting the simulator forgets every session. That is acceptable for
a dev/test tool (Stripe is the durable party); payment-service treats an unknown session like any outage.
As at Stripe, a session stays open until it is paid, expired by the merchant (`expire`) or reaches its
`expires_at` (24 hours by default); a retried call with the same Idempotency-Key gets the first answer.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["succeeded", "failed", "processing"]
DAY = 86400


class StripeError(Exception):
    """Answered as Stripe answers errors: `{"error": {"type", "code", "message"}}` with this status."""

    def __init__(self, status: int, message: str, code: str | None = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.code, self.kind = status, code, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"type": self.kind, "code": self.code, "message": str(self)}}


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


@dataclass
class Session:
    session_id: str
    reference: str | None  # client_reference_id
    metadata: dict[str, str]
    amount_cents: int
    currency: str
    url: str
    success_url: str | None
    cancel_url: str | None
    expires_at: float  # unix seconds
    created: float = field(default_factory=time.time)
    status: Literal["open", "complete", "expired"] = "open"
    payment_status: Literal["paid", "unpaid"] = "unpaid"
    intent_id: str | None = None
    intent_status: str | None = None
    decided: float | None = None  # unix seconds the customer paid or was declined
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)  # idempotency key -> refund

    def current(self, now: float) -> Session:
        if self.status == "open" and now >= self.expires_at:
            self.status = "expired"
        return self

    def intent(self) -> dict[str, Any]:
        return {"id": self.intent_id, "object": "payment_intent", "livemode": False, "amount": self.amount_cents,
                "currency": self.currency, "status": self.intent_status, "metadata": self.metadata}

    def to_stripe(self, expand_intent: bool = False) -> dict[str, Any]:
        intent: Any = self.intent() if expand_intent and self.intent_id else self.intent_id
        return {"id": self.session_id, "object": "checkout.session", "livemode": False, "mode": "payment",
                "status": self.status, "payment_status": self.payment_status, "amount_total": self.amount_cents,
                "amount_subtotal": self.amount_cents, "currency": self.currency,
                "client_reference_id": self.reference, "metadata": self.metadata, "payment_intent": intent,
                "url": self.url if self.status == "open" else None, "created": int(self.created),
                "expires_at": int(self.expires_at), "success_url": self.success_url, "cancel_url": self.cancel_url}


def amount_of(line_items: list[dict[str, Any]]) -> tuple[int, str]:
    total, currency = 0, ""
    for item in line_items:
        price = item.get("price_data") or {}
        try:
            total += int(price["unit_amount"]) * int(item.get("quantity", 1))
            currency = str(price["currency"]).lower()
        except (KeyError, ValueError) as exc:
            raise StripeError(400, "line_items need price_data[currency], price_data[unit_amount] and quantity",
                              "parameter_missing") from exc
    if not line_items:
        raise StripeError(400, "line_items is required in payment mode", "parameter_missing")
    return total, currency


class SessionStore:
    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}
        self._answers: dict[str, Any] = {}  # Idempotency-Key -> the first answer (Stripe keeps them 24 h)
        self.refunds_to_refuse = 0  # test control: the next this many refund requests are refused

    def refuse_refunds(self, count: int) -> int:
        self.refunds_to_refuse = count
        return count

    def create(self, params: dict[str, Any], public_url: str, idempotency_key: str | None) -> Session:
        if idempotency_key and (known := self._answers.get(f"create:{idempotency_key}")) is not None:
            return self._by_id[known]
        if params.get("mode") != "payment":
            raise StripeError(400, "this simulator takes mode=payment only", "parameter_invalid_string")
        amount, currency = amount_of(list(params.get("line_items") or []))
        sid = _id("cs_test")
        expires = float(params.get("expires_at") or time.time() + DAY)
        session = Session(session_id=sid, reference=params.get("client_reference_id"),
                          metadata=dict(params.get("metadata") or {}), amount_cents=amount, currency=currency,
                          url=f"{public_url}/pay/{sid}", success_url=params.get("success_url"),
                          cancel_url=params.get("cancel_url"), expires_at=expires)
        self._by_id[sid] = session
        if idempotency_key:
            self._answers[f"create:{idempotency_key}"] = sid
        return session

    def get(self, session_id: str) -> Session:
        try:
            return self._by_id[session_id].current(time.time())
        except KeyError:
            raise StripeError(404, f"No such checkout.session: '{session_id}'", "resource_missing") from None

    def all(self) -> list[Session]:
        return list(self._by_id.values())

    def pay(self, session_id: str, outcome: Outcome) -> tuple[Session, str]:
        """The customer pays: `succeeded` (card), `failed`, or `processing` (a bank debit: the session completes
        unpaid; a later `succeeded` or `failed` settles it). Returns the session and the event Stripe sends."""
        session = self.get(session_id)
        waiting = session.status == "complete" and session.intent_status == "processing"
        if session.status != "open" and not (waiting and outcome != "processing"):
            raise StripeError(409, f"session is {session.status} ({session.payment_status})")
        session.status, session.decided = "complete", time.time()
        session.intent_id = session.intent_id or _id("pi")
        session.payment_status = "paid" if outcome == "succeeded" else "unpaid"
        session.intent_status = {"succeeded": "succeeded", "failed": "requires_payment_method"}.get(outcome, outcome)
        if outcome == "processing" or (outcome == "succeeded" and not waiting):
            return session, "checkout.session.completed"
        return session, f"checkout.session.async_payment_{outcome}"

    def expire(self, session_id: str) -> Session:
        session = self.get(session_id)
        if session.status != "open":
            raise StripeError(400, f"Only Checkout Sessions with a status of open can be expired; this one is "
                              f"{session.status}.")
        session.status = "expired"
        return session

    def refund(self, params: dict[str, Any], idempotency_key: str | None) -> tuple[Session, dict[str, Any], bool]:
        """Once per payment, never beyond what was paid; the same Idempotency-Key gets the same refund (and
        False: not a new one)."""
        intent = str(params.get("payment_intent") or "")
        session = next((s for s in self._by_id.values() if s.intent_id and s.intent_id == intent), None)
        if session is None:
            raise StripeError(404, f"No such payment_intent: '{intent}'", "resource_missing")
        if idempotency_key and idempotency_key in session.refunds:
            return session, session.refunds[idempotency_key], False
        if session.payment_status != "paid":
            raise StripeError(400, "This PaymentIntent has no successful charge to refund.")
        if self.refunds_to_refuse > 0:
            self.refunds_to_refuse -= 1
            raise StripeError(402, f"refund refused ({self.refunds_to_refuse} more to refuse)", "balance_insufficient")
        if session.refunds:
            raise StripeError(400, "Charge has already been refunded.", "charge_already_refunded")
        amount = int(params.get("amount") or session.amount_cents)
        if not 0 < amount <= session.amount_cents:
            raise StripeError(400, f"Refund amount ({amount}) is greater than charge amount ({session.amount_cents})",
                              "amount_too_large")
        refund: dict[str, Any] = {"id": _id("re"), "object": "refund", "amount": amount, "currency": session.currency,
                  "payment_intent": intent, "status": "succeeded", "metadata": dict(params.get("metadata") or {}),
                  "created": int(time.time())}
        session.refunds[idempotency_key or str(refund["id"])] = refund
        return session, refund, True

    @staticmethod
    def charge(session: Session, refund: dict[str, Any]) -> dict[str, Any]:
        """The session's charge, refunded (charge.refunded's object)."""
        return {"id": f"ch_{(session.intent_id or '')[3:]}", "object": "charge", "livemode": False,
                "amount": session.amount_cents, "amount_refunded": refund["amount"], "currency": session.currency,
                "payment_intent": session.intent_id, "refunded": refund["amount"] == session.amount_cents,
                "metadata": session.metadata, "refunds": {"object": "list", "data": [refund]}}
