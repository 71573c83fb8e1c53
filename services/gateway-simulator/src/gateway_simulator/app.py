"""The simulator's HTTP API: sessions, refunds, test control and the hosted pay page.

Like a real gateway's, its merchant API (`/v1`) and the session list answer 401 without the merchant's API
key (`Authorization: Bearer <GATEWAY_API_KEY>`). The hosted page and its test twin `POST /sim/sessions/{id}/pay`
need none: a session id is the customer's capability, as on a real hosted checkout.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, FastAPI, Header, Request, Security
from fastapi.responses import HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from ticketing.api.app import build_app
from ticketing.api.errors import ApiError, not_found

from gateway_simulator.config import SimulatorSettings
from gateway_simulator.delivery import Deliverer, Delivery
from gateway_simulator.model import RefundRefused, Session, SessionConflict, SessionNotFound, SessionStore
from gateway_simulator.page import pay_page, result_page
from gateway_simulator.schemas import (
    PayCommand,
    PayResult,
    RefundCreate,
    RefundCreated,
    RefuseRefunds,
    SessionCreate,
    SessionCreated,
    SessionPublic,
)

# Declared for the OpenAPI document (its merchant routes need a bearer key); the key is checked below.
_MERCHANT = Security(HTTPBearer(auto_error=False, scheme_name="merchant",
                                description="The merchant's API key (GATEWAY_API_KEY)."))


async def merchant_key(request: Request, _credentials: HTTPAuthorizationCredentials | None = _MERCHANT) -> None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    expected: str = request.app.state.settings.gateway_api_key
    if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), expected.encode()):
        raise ApiError(401, "UNAUTHORIZED", "the merchant's API key is required: Authorization: Bearer <key>",
                       headers={"WWW-Authenticate": "Bearer"})


router = APIRouter()  # the customer's side: the hosted page (and its test twin)
merchant = APIRouter(dependencies=[Depends(merchant_key)])


def _store(request: Request) -> SessionStore:
    return request.app.state.store  # type: ignore[no-any-return]


def _session(request: Request, session_id: str) -> Session:
    try:
        return _store(request).get(session_id)
    except SessionNotFound:
        raise not_found("session") from None


def _public(session: Session) -> SessionPublic:
    return SessionPublic(sessionId=session.session_id, status=session.status, reference=session.reference,
                         amountCents=session.amount_cents,
                         expiresAt=datetime.fromtimestamp(session.expires_at, UTC),
                         refundIds=sorted(set(session.refunds.values())),
                         paidAt=datetime.fromtimestamp(session.decided, UTC) if session.decided else None)


@merchant.post("/v1/sessions", status_code=200, response_model=SessionCreated)
async def create_session(body: SessionCreate, request: Request) -> SessionCreated:
    # Deduplicated by `reference` (the merchant's payment id): a retried create gets the same session.
    session = _store(request).create(reference=body.reference, amount_cents=body.amountCents,
                                     callback_url=body.callbackUrl, expires_at=body.expiresAt.timestamp())
    settings: SimulatorSettings = request.app.state.settings
    return SessionCreated(sessionId=session.session_id, url=f"{settings.public_url}/pay/{session.session_id}",
                          status=session.status, expiresAt=datetime.fromtimestamp(session.expires_at, UTC))


@merchant.get("/v1/sessions/{session_id}", response_model=SessionPublic)
async def get_session(session_id: str, request: Request) -> SessionPublic:
    return _public(_session(request, session_id))


@merchant.post("/v1/sessions/{session_id}/cancel", response_model=SessionPublic)
async def cancel_session(session_id: str, request: Request) -> SessionPublic:
    _session(request, session_id)
    return _public(_store(request).cancel(session_id))


@merchant.post("/v1/sessions/{session_id}/refunds", response_model=RefundCreated)
async def refund(session_id: str, request: Request, body: RefundCreate | None = None,
                 idempotency_key: Annotated[str | None, Header()] = None) -> RefundCreated:
    _session(request, session_id)
    try:
        refund_id = _store(request).refund(session_id, idempotency_key or session_id,
                                           body.amountCents if body is not None else None)
        return RefundCreated(refundId=refund_id)
    except SessionConflict as exc:
        raise ApiError(409, "CONFLICT", str(exc)) from exc
    except RefundRefused as exc:
        raise ApiError(402, "REFUND_REFUSED", str(exc)) from exc


def _pay(request: Request, session_id: str, command: PayCommand) -> PayResult:
    _session(request, session_id)
    try:
        session = _store(request).pay(session_id, command.outcome)
    except SessionConflict as exc:
        raise ApiError(409, "CONFLICT", str(exc)) from exc
    deliverer: Deliverer = request.app.state.deliverer
    event = deliverer.event_for(session)
    delivery: Delivery = command.delivery
    deliverer.schedule(session, event, delivery, command.delaySeconds)
    return PayResult(sessionId=session_id, status=session.status, eventId=event["id"])


@router.post("/sim/sessions/{session_id}/pay", response_model=PayResult)
async def sim_pay(session_id: str, command: PayCommand, request: Request) -> PayResult:
    """Test control: settle a session and choose how its callback is delivered."""
    return _pay(request, session_id, command)


@merchant.post("/sim/refunds/refuse")
async def sim_refuse_refunds(body: RefuseRefunds, request: Request) -> dict[str, int]:
    """Test control, the merchant's only: refuse the next `count` refund requests (402 REFUND_REFUSED), as a
    gateway does that cannot refund for a while; 0 stops refusing."""
    return {"refusing": _store(request).refuse_refunds(body.count)}


@merchant.get("/sim/sessions")
async def sim_sessions(request: Request) -> list[dict[str, object]]:
    """Test control, the merchant's only: every session this process created (to count sessions per checkout)."""
    return [{"sessionId": s.session_id, "reference": s.reference, "created": s.created, "status": s.status}
            for s in _store(request).all()]


@merchant.get("/sim/sessions/{session_id}/deliveries")
async def sim_deliveries(session_id: str, request: Request) -> list[dict[str, object]]:
    deliverer: Deliverer = request.app.state.deliverer
    return [vars(a) for a in deliverer.attempts.get(session_id, [])]


@router.get("/pay/{session_id}", response_class=HTMLResponse)
async def hosted_page(session_id: str, request: Request) -> HTMLResponse:
    return HTMLResponse(pay_page(_session(request, session_id)))


@router.post("/pay/{session_id}", response_class=HTMLResponse)
async def hosted_submit(session_id: str, request: Request) -> HTMLResponse:
    # Parsed by hand: FastAPI's Form() needs python-multipart, one dependency too many for two buttons.
    action = parse_qs((await request.body()).decode()).get("action", [""])[0]
    outcome = "succeeded" if action == "pay" else "failed"
    result = _pay(request, session_id, PayCommand(outcome=outcome))
    return HTMLResponse(result_page(result.status))


def get_application(settings: SimulatorSettings | None = None) -> FastAPI:
    settings = settings or SimulatorSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await app.state.deliverer.close()

    app = build_app(title="gateway-simulator", tokens=None, access_log=settings.access_log, routers=[merchant, router],
                    max_body_bytes=settings.max_body_bytes, max_header_bytes=settings.max_header_bytes,
                    lifespan=lifespan)
    app.state.settings = settings
    app.state.store = SessionStore()
    app.state.deliverer = Deliverer(settings)
    return app
