"""A stand-in for payment-service's `GET /payments/{paymentId}` over real HTTP, as payment-service's
service-role access describes it: 200 {"paymentId", "status"}, 404 NOT_FOUND when it never recorded the
payment, 401 without a valid token, 404 for a token that is not the service's (no oracle)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from ticketing.auth import InvalidToken, verify_token
from ticketing_testing import free_port


@dataclass
class PaymentStub:
    url: str
    statuses: dict[str, str] = field(default_factory=dict)  # payment id -> status; absent: never recorded
    asked: list[str] = field(default_factory=list)
    down: bool = False  # answer 503 to everything


def _app(stub: PaymentStub, secret: str) -> Starlette:
    async def get_payment(request: Request) -> JSONResponse:
        payment_id = request.path_params["payment_id"]
        stub.asked.append(payment_id)
        if stub.down:
            return JSONResponse({"error": "UNAVAILABLE", "message": "down"}, status_code=503)
        try:
            principal = verify_token(secret, request.headers.get("authorization", "").removeprefix("Bearer "))
        except InvalidToken:
            return JSONResponse({"error": "UNAUTHORIZED", "message": "token"}, status_code=401)
        status = stub.statuses.get(payment_id) if principal.role == "service" else None
        if status is None:
            return JSONResponse({"error": "NOT_FOUND", "message": "payment not found"}, status_code=404)
        return JSONResponse({"paymentId": payment_id, "status": status})
    return Starlette(routes=[Route("/payments/{payment_id}", get_payment)])


@contextlib.asynccontextmanager
async def payment_stub(secret: str) -> AsyncIterator[PaymentStub]:
    port = free_port()
    stub = PaymentStub(f"http://127.0.0.1:{port}")
    server = uvicorn.Server(uvicorn.Config(_app(stub, secret), host="127.0.0.1", port=port, log_config=None,
                                           lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises why it could not start
        await asyncio.sleep(0.02)
    try:
        yield stub
    finally:
        server.should_exit = True
        await task
