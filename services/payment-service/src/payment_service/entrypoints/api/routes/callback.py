"""`POST /payments/callback`: the payment provider's (Stripe's) signed webhooks.

The signature is checked on the raw bytes, by the Stripe SDK, before anything is parsed or stored: a bad
or missing signature is a 401 and changes nothing. Only then is the event de-duplicated and applied.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from ticketing.api.errors import ApiError
from ticketing.logs import log_action

from payment_service.adapters.stripe_webhooks import BadSignature, parse, verify
from payment_service.domain.errors import DependencyUnavailable
from payment_service.entrypoints.api.deps import DepsDep
from payment_service.entrypoints.api.errors import to_api_error
from payment_service.entrypoints.api.schemas import CallbackAck, CallbackEvent
from payment_service.service_layer.callbacks import handle_callback

logger = logging.getLogger(__name__)
router = APIRouter(tags=["gateway"])
CALLBACK_PATH = "/payments/callback"


CALLBACK_OPENAPI: dict[str, Any] = {
    "parameters": [{
        "name": "Stripe-Signature", "in": "header", "required": True,
        "description": "`t=<unix seconds>,v1=<hex HMAC-SHA256(STRIPE_WEBHOOK_SECRET, \"<t>.<raw body>\")>`; several "
                       "`v1` allowed (a secret being rolled); `t` within 300 s of now. Checked on the raw bytes "
                       "before anything is parsed: a bad or missing signature is 401 and changes nothing.",
        "schema": {"type": "string", "pattern": r"^t=\d+(,v\d=[0-9a-f]+)+$"}}],
    "requestBody": {"required": True, "content": {"application/json": {"schema": CallbackEvent.model_json_schema()}}},
}


@router.post(CALLBACK_PATH, response_model=CallbackAck, name="gateway_callback",
             openapi_extra=CALLBACK_OPENAPI, responses={401: {}})
async def gateway_callback(request: Request, deps: DepsDep) -> CallbackAck:
    raw = await request.body()
    settings = deps.settings
    try:
        verify(settings.stripe_webhook_secret, request.headers.get("stripe-signature"), raw,
               settings.callback_tolerance_seconds)
    except BadSignature as exc:
        log_action(logger, "callback.bad_signature", str(exc), level=logging.WARNING)
        raise ApiError(401, "UNAUTHORIZED", "invalid Stripe-Signature") from exc
    cmd = parse(raw)
    if cmd is None:
        raise ApiError(422, "VALIDATION_ERROR", "callback body is not a Stripe event")
    try:
        outcome = await handle_callback(cmd, deps)
    except DependencyUnavailable as exc:  # 503: Stripe retries the delivery later
        raise to_api_error(exc) from exc
    log_action(logger, "callback.received", event_id=cmd.event_id, event_type=cmd.event_type, outcome=outcome)
    return CallbackAck(outcome=outcome)
