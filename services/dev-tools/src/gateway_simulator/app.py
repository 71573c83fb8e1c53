"""The simulator's HTTP API: the subset of Stripe's API payment-service's adapter calls, in Stripe's shapes
(form-encoded requests, Stripe's objects and errors, `livemode: false`), its test controls and the hosted page.

Like Stripe's, its API (`/v1`) and the test controls that read the merchant's data answer 401 without the
merchant's secret key (`Authorization: Bearer <STRIPE_API_KEY>`). The hosted page and its test twin
`POST /sim/sessions/{id}/pay` need none: a session id is the customer's capability, as on a hosted checkout.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Request, Security
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from ticketing.api.app import build_app

from gateway_simulator.config import SimulatorSettings
from gateway_simulator.delivery import Deliverer
from gateway_simulator.form import parse_form
from gateway_simulator.model import SessionStore, StripeError
from gateway_simulator.page import pay_page, result_page
from gateway_simulator.schemas import STRIPE_ERRORS, PayCommand, PayResult, RefuseRefunds

_MERCHANT = Security(HTTPBearer(auto_error=False, scheme_name="merchant",
                                description="The merchant's secret API key (STRIPE_API_KEY)."))
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


async def merchant_key(request: Request, _credentials: HTTPAuthorizationCredentials | None = _MERCHANT) -> None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    expected: str = request.app.state.settings.stripe_api_key
    if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), expected.encode()):
        raise StripeError(401, "Invalid API Key provided.", kind="invalid_request_error")


router = APIRouter()  # the customer's side: the hosted page (and its test twin)
merchant = APIRouter(dependencies=[Depends(merchant_key)])


def _store(request: Request) -> SessionStore:
    return request.app.state.store  # type: ignore[no-any-return]


def _deliverer(request: Request) -> Deliverer:
    return request.app.state.deliverer  # type: ignore[no-any-return]


@merchant.post("/v1/checkout/sessions", responses=STRIPE_ERRORS)
async def create_session(request: Request, idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    settings: SimulatorSettings = request.app.state.settings
    params = parse_form(await request.body())
    try:
        return _store(request).create(params, settings.public_url, idempotency_key).to_stripe()
    except (TypeError, ValueError, AttributeError) as exc:  # a parameter of the wrong shape, as Stripe says it
        raise StripeError(400, f"Invalid parameters: {type(exc).__name__}", "parameter_invalid") from exc


@merchant.get("/v1/checkout/sessions/{session_id}", responses=STRIPE_ERRORS)
async def get_session(session_id: str, request: Request) -> dict[str, Any]:
    expand = parse_form(request.url.query.encode()).get("expand") or []
    return _store(request).get(session_id).to_stripe(expand_intent="payment_intent" in list(expand))


@merchant.post("/v1/checkout/sessions/{session_id}/expire", responses=STRIPE_ERRORS)
async def expire_session(session_id: str, request: Request) -> dict[str, Any]:
    session = _store(request).expire(session_id)
    _deliverer(request).schedule(session, "checkout.session.expired", session.to_stripe(), "normal", 0)
    return session.to_stripe()


@merchant.post("/v1/refunds", responses=STRIPE_ERRORS)
async def create_refund(request: Request, idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    store = _store(request)
    try:
        session, refund, fresh = store.refund(parse_form(await request.body()), idempotency_key)
    except (TypeError, ValueError, AttributeError) as exc:
        raise StripeError(400, f"Invalid parameters: {type(exc).__name__}", "parameter_invalid") from exc
    if fresh:  # a replayed request is answered again; its event was sent once
        _deliverer(request).schedule(session, "charge.refunded", store.charge(session, refund), "normal", 0)
    return refund


def _pay(request: Request, session_id: str, command: PayCommand) -> PayResult:
    session, kind = _store(request).pay(session_id, command.outcome)
    event_id = _deliverer(request).schedule(session, kind, session.to_stripe(), command.delivery, command.delaySeconds)
    status = {"succeeded": "paid", "failed": "failed"}.get(command.outcome, command.outcome)
    return PayResult(sessionId=session_id, status=status, eventId=event_id)


@router.post("/sim/sessions/{session_id}/pay", response_model=PayResult)
async def sim_pay(session_id: str, command: PayCommand, request: Request) -> PayResult:
    """Test control: the customer pays (or the payment fails, or is a bank debit still processing), and how its
    webhook is delivered."""
    return _pay(request, session_id, command)


@merchant.post("/sim/refunds/refuse")
async def sim_refuse_refunds(body: RefuseRefunds, request: Request) -> dict[str, int]:
    """Test control, the merchant's only: refuse the next `count` refund requests (402), as Stripe does when
    the balance cannot cover them; 0 stops refusing."""
    return {"refusing": _store(request).refuse_refunds(body.count)}


@merchant.get("/sim/sessions")
async def sim_sessions(request: Request) -> list[dict[str, object]]:
    """Test control, the merchant's only: every session this process created (to count sessions per checkout)."""
    return [{"sessionId": s.session_id, "reference": s.reference, "created": s.created, "status": s.status,
             "paymentStatus": s.payment_status, "paidAt": s.decided,
             "refundIds": sorted(str(r["id"]) for r in s.refunds.values())}
            for s in _store(request).all()]


@merchant.get("/sim/sessions/{session_id}/deliveries")
async def sim_deliveries(session_id: str, request: Request) -> list[dict[str, object]]:
    return [vars(a) for a in _deliverer(request).attempts.get(session_id, [])]


@router.get("/pay/{session_id}", response_class=HTMLResponse)
async def hosted_page(session_id: str, request: Request) -> HTMLResponse:
    return HTMLResponse(pay_page(_store(request).get(session_id)))


@router.post("/pay/{session_id}", response_class=HTMLResponse)
async def hosted_submit(session_id: str, request: Request) -> HTMLResponse:
    # Parsed by hand: FastAPI's Form() needs python-multipart, one dependency too many for two buttons.
    action = parse_form(await request.body()).get("action", "")
    result = _pay(request, session_id, PayCommand(outcome="succeeded" if action == "pay" else "failed"))
    return HTMLResponse(result_page(result.status))


_CODES = {400: "VALIDATION_ERROR", 401: "UNAUTHORIZED", 402: "REFUND_REFUSED", 404: "NOT_FOUND", 409: "CONFLICT"}


async def _stripe_error(request: Request, exc: Exception) -> JSONResponse:
    """Stripe's error shape on Stripe's API (`/v1`); the platform's on the test controls and the page."""
    assert isinstance(exc, StripeError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    if request.url.path.startswith("/v1/"):
        return JSONResponse(exc.body(), status_code=exc.status, headers=headers)
    body = {"error": _CODES.get(exc.status, "BAD_REQUEST"), "message": str(exc)}
    return JSONResponse(body, status_code=exc.status, headers=headers)


def get_application(settings: SimulatorSettings | None = None) -> FastAPI:
    settings = settings or SimulatorSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await app.state.deliverer.close()

    app = build_app(title="gateway-simulator", tokens=None, access_log=settings.access_log, routers=[merchant, router],
                    max_body_bytes=settings.max_body_bytes, max_header_bytes=settings.max_header_bytes,
                    lifespan=lifespan)
    app.add_exception_handler(StripeError, _stripe_error)
    app.state.settings = settings
    app.state.store = SessionStore()
    app.state.deliverer = Deliverer(settings)
    return app
