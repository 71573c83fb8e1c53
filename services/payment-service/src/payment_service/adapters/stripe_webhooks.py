"""Stripe's webhooks: the signature checked by the SDK's own verification, the event read into a command.

`Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=...]` over the raw bytes
(several v1 allowed: the endpoint's secret being rolled). The SDK refuses a `t` older than the tolerance;
one further in the future than the tolerance is refused here too (a clock that far ahead is no sender of
ours). Only the event's id, its type and the ids of its object are read: Stripe's current object state,
asked afterwards, decides what happens (docs/payments.md has the table).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
import stripe

from payment_service.domain.commands import GatewayCallback

SESSION_EVENTS = frozenset({"checkout.session.completed", "checkout.session.async_payment_succeeded",
                            "checkout.session.async_payment_failed", "checkout.session.expired"})
REFUND_EVENTS = frozenset({"charge.refunded", "refund.updated"})


class BadSignature(Exception):
    pass


def verify(secret: str, header: str | None, body: bytes, tolerance: int, now: float | None = None) -> None:
    """Raise BadSignature unless one v1 matches and `t` is within +-tolerance seconds of now."""
    try:
        stripe.WebhookSignature.verify_header(body.decode("utf-8"), header, secret, tolerance)
    except (stripe.SignatureVerificationError, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise BadSignature(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__) from exc
    timestamp = next(int(v) for k, _, v in (i.partition("=") for i in (header or "").split(",")) if k.strip() == "t")
    if timestamp > (time.time() if now is None else now) + tolerance:
        raise BadSignature("timestamp too far in the future")


def parse(body: bytes) -> GatewayCallback | None:
    """The command for a verified event; None for an event we do not act on (or a body that is no event)."""
    try:
        event = orjson.loads(body)
        obj: dict[str, Any] = event["data"]["object"]
        event_id, event_type = str(event["id"]), str(event["type"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    found = obj.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    if event_type in SESSION_EVENTS:
        reference = obj.get("client_reference_id") or metadata.get("paymentId") or ""
        return GatewayCallback(event_id=event_id, event_type=event_type, session_id=str(obj.get("id", "")),
                               reference=str(reference))
    if event_type in REFUND_EVENTS:
        refund = obj if obj.get("object") == "refund" else _last_refund(obj)
        return GatewayCallback(event_id=event_id, event_type=event_type, session_id="",
                               reference=str(metadata.get("paymentId", "")), refund_id=str(refund.get("id", "")),
                               refund_status=str(refund.get("status", "succeeded" if obj.get("refunded") else "")))
    return GatewayCallback(event_id=event_id, event_type=event_type, session_id="", reference="", ignored=True)


def _last_refund(charge: dict[str, Any]) -> dict[str, Any]:
    refunds = charge.get("refunds")
    listed = refunds.get("data") if isinstance(refunds, dict) else None
    return listed[0] if isinstance(listed, list) and listed and isinstance(listed[0], dict) else {}
