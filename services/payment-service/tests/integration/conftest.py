"""`open_ports`: every port of service_layer/ports.py as a fake (tests/fakes/) or as the real adapter, for
the contract tests (test_contract_*.py): Postgres for the repositories and the unit of work, the gateway
simulator process for the gateway, and for hold-service and voucher-service a stand-in HTTP server.

The stand-in answers hold-service's and voucher-service's HTTP contract (docs/api: paths, service token, bodies,
status codes) from the fakes' own state, over a real socket: the contract test then shows that the HTTP adapters
keep the port's meaning across that contract. The services themselves are not started here (their own tests cover
their side; tests/e2e runs them together).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from payment_service.adapters.hold_directory import HttpHoldDirectory
from payment_service.adapters.http import ServiceClient, service_token
from payment_service.adapters.repository import PgPaymentsUnitOfWork
from payment_service.adapters.stripe_provider import StripeGateway
from payment_service.adapters.vouchers import HttpVouchers
from payment_service.config import Settings
from payment_service.domain.errors import (
    DependencyUnavailable,
    HoldNotActive,
    HoldNotFound,
    ShowtimeClosed,
    VoucherRejected,
)
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import Gateway, HoldDirectory, PaymentsUnitOfWork, Vouchers
from ticketing.auth import InvalidToken, verify_token
from ticketing.db import create_pool
from ticketing_testing import free_port, merchant_auth

STAND_IN_SECRET = "stand-in-service-secret-0123456789abcdef"


def stand_in_app() -> FastAPI:
    """hold-service's GET /holds/{id} and POST /holds/{id}/extend and voucher-service's reservations, answered
    from app.state's fakes."""
    app = FastAPI()

    @app.middleware("http")
    async def service_token_only(request: Request, call_next: Any) -> Response:
        try:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if verify_token(STAND_IN_SECRET, token).role != "service":
                raise InvalidToken("not a service")
        except InvalidToken:
            return JSONResponse({"error": "UNAUTHORIZED", "message": "a service token is required"}, 401)
        response: Response = await call_next(request)
        return response

    @app.exception_handler(DependencyUnavailable)
    async def down(request: Request, exc: DependencyUnavailable) -> Response:
        return JSONResponse({"error": "UNAVAILABLE", "message": "down"}, 503)

    @app.exception_handler(VoucherRejected)
    async def rejected(request: Request, exc: VoucherRejected) -> Response:
        return JSONResponse({"error": exc.code, "message": exc.message}, exc.status)

    @app.get("/holds/{hold_id}")
    async def get_hold(hold_id: uuid.UUID, request: Request) -> Response:
        hold = await request.app.state.holds.get(hold_id)
        if hold is None:
            return JSONResponse({"error": "NOT_FOUND", "message": "not found"}, 404)
        return JSONResponse({"holdId": str(hold.hold_id), "bookingId": str(hold.booking_id),
                             "customerId": hold.customer_id, "showtimeId": hold.showtime_id, "seats": ["A1"],
                             "status": hold.status, "expiresAt": hold.expires_at.isoformat(),
                             "amountCents": hold.amount_cents,
                             **({"createdAt": hold.created_at.isoformat()} if hold.created_at else {})})

    @app.post("/holds/{hold_id}/extend")
    async def extend(hold_id: uuid.UUID, request: Request) -> Response:
        body = await request.json()
        try:
            expires = await request.app.state.holds.extend(hold_id, body["customerId"],
                                                           datetime.fromisoformat(body["until"]))
        except HoldNotFound:
            return JSONResponse({"error": "NOT_FOUND", "message": "not found"}, 404)
        except ShowtimeClosed as exc:
            return JSONResponse({"error": "SHOWTIME_CLOSED", "message": str(exc)}, 409)
        except HoldNotActive as exc:
            return JSONResponse({"error": "HOLD_NOT_ACTIVE", "message": str(exc)}, 409)
        return JSONResponse({"expiresAt": expires.isoformat()})

    @app.post("/vouchers/{code}/reservations")
    async def reserve(code: str, request: Request) -> Response:
        body = await request.json()
        discount = await request.app.state.vouchers.reserve(
            code, customer_id=body["customerId"], order_id=uuid.UUID(body["orderId"]),
            order_amount=body["orderAmount"])
        return JSONResponse({"orderId": body["orderId"], "discountAmount": discount}, 201)

    @app.delete("/vouchers/{code}/reservations/{order_id}")
    async def release(code: str, order_id: uuid.UUID, request: Request) -> Response:
        vouchers = request.app.state.vouchers
        known = vouchers.reserved.get(order_id) == code or order_id in vouchers.released
        await vouchers.release(code, order_id)
        if not known:  # as voucher-service: an order it never reserved is 404 NOT_FOUND
            return JSONResponse({"error": "NOT_FOUND", "message": "not found"}, 404)
        return Response(status_code=204)

    return app


@pytest_asyncio.fixture(scope="session")
async def stand_in() -> AsyncIterator[tuple[str, FastAPI]]:
    app, port = stand_in_app(), free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    await task


@dataclass
class Ports:
    """The ports of one implementation and what a contract test needs around them. `hold_store` and
    `voucher_store` are what hold-service and voucher-service know (the fakes themselves, or the fakes behind
    the stand-in); `now`/`elapse` are the parties' clock; `pay` is the customer on the hosted page."""

    kind: str
    uow: Callable[[], PaymentsUnitOfWork]
    gateway: Gateway
    holds: HoldDirectory
    vouchers: Vouchers
    hold_store: Any
    voucher_store: Any
    now: Callable[[], datetime]
    elapse: Callable[[float], Awaitable[None]]
    pay: Callable[[str, str], Awaitable[None]]
    events: Callable[[uuid.UUID], Awaitable[list[dict[str, Any]]]]
    unreachable_gateway: Callable[[], Gateway]
    added: list[uuid.UUID] = field(default_factory=list)

    async def close_refunds(self) -> None:
        """Refunds this test left due are closed: the reconcilers of later tests on the same database
        (tests/integration/test_saga.py counts its gateway's refund calls) must not find them."""
        for payment_id in self.added:
            await self.change(lambda uow, p=payment_id: uow.payments.mark_refunded(p, "re_contract_test"))

    def payment(self, hold_id: uuid.UUID | None = None, amount: int = 2400, ttl: float = 600,
                voucher: str | None = None) -> Payment:
        """A draft as the checkout makes it (PENDING, expiring with its hold)."""
        return Payment(payment_id=uuid.uuid4(), hold_id=hold_id or uuid.uuid4(), booking_id=uuid.uuid4(),
                       customer_id=10**11 + uuid.uuid4().int % 10**11, showtime_id=7, amount_cents=amount,
                       discount_cents=0, voucher_code=voucher, status="PENDING",
                       expires_at=self.now() + timedelta(seconds=ttl))

    async def add(self, draft: Payment | None = None, max_attempts: int = 3) -> Payment:
        """The draft written by the repository, committed, as it reads back."""
        draft = draft or self.payment()
        self.added.append(draft.payment_id)
        async with self.uow() as uow:
            await uow.payments.add(draft, f"key-{draft.payment_id}", max_attempts)
            await uow.commit()
        stored = await self.get(draft.payment_id)
        assert stored is not None
        return stored

    async def get(self, payment_id: uuid.UUID) -> Payment | None:
        async with self.uow() as uow:
            return await uow.payments.get(payment_id)

    async def change(self, step: Callable[[PaymentsUnitOfWork], Awaitable[Any]]) -> Any:
        """`step(uow)` in a unit of work that commits; its result."""
        async with self.uow() as uow:
            result = await step(uow)
            await uow.commit()
        return result


@asynccontextmanager
async def open_ports(kind: str, fakes: ModuleType, dsn: str, simulator: str,
                     stand_in: tuple[str, FastAPI]) -> AsyncIterator[Ports]:
    """`kind`: "fake" or "real" (Postgres on `dsn`, the `simulator`, the `stand_in` over HTTP)."""
    if kind == "fake":
        world = fakes.fake_deps()

        async def advance(seconds: float) -> None:
            world.clock.advance(seconds)

        async def pay(session_id: str, outcome: str) -> None:
            world.gateway.pay(session_id, outcome)

        async def recorded(booking_id: uuid.UUID) -> list[dict[str, Any]]:
            return [e.model_dump(mode="json") for e in world.outbox() if e.bookingId == booking_id]

        def gateway_down() -> Gateway:
            world.gateway.down = True
            return world.gateway

        d = world.deps
        yield Ports(kind, d.uow, d.gateway, d.holds, d.vouchers, world.holds, world.vouchers, world.clock.now,
                    advance, pay, recorded, gateway_down)
        return
    async with _real(fakes, dsn, simulator, stand_in) as ports:
        yield ports


@asynccontextmanager
async def _real(fakes: ModuleType, dsn: str, simulator: str, stand_in: tuple[str, FastAPI]) -> AsyncIterator[Ports]:
    stand_in_url, app = stand_in
    app.state.holds, app.state.vouchers = fakes.FakeHoldDirectory(), fakes.FakeVouchers()
    pool = await create_pool(dsn, min_size=1, max_size=5)
    key = merchant_auth()  # what the simulator, started beside, reads too
    clients = [ServiceClient(simulator, credentials=lambda: key["Authorization"], timeout=5, name="simulator"),
               ServiceClient(stand_in_url, credentials=service_token(STAND_IN_SECRET), timeout=5, name="stand-in")]

    async def pay(session_id: str, outcome: str) -> None:
        r = await clients[0].request("POST", f"/sim/sessions/{session_id}/pay",
                                     json={"outcome": outcome, "delivery": "never"})
        assert r.status_code == 200, r.text

    async def outbox(booking_id: uuid.UUID) -> list[dict[str, Any]]:
        rows = await pool.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 "
                                "ORDER BY id", str(booking_id))
        return [json.loads(r["e"]) for r in rows]

    def at(base: str) -> StripeGateway:
        return StripeGateway(Settings(stripe_api_base=base), timeout=5)

    ports = Ports("real", lambda: PgPaymentsUnitOfWork(pool), at(simulator), HttpHoldDirectory(clients[1]),
                  HttpVouchers(clients[1]), app.state.holds, app.state.vouchers, lambda: datetime.now(UTC),
                  asyncio.sleep, pay, outbox, lambda: at(f"http://127.0.0.1:{free_port()}"))
    try:
        yield ports
        await ports.close_refunds()
    finally:
        for client in clients:
            await client.close()
        await pool.close()


@pytest_asyncio.fixture(params=["fake", "real"])
async def ports(request: pytest.FixtureRequest, fakes: ModuleType, kit: ModuleType, migrated_dsn: Any,
                simulator_url: str, stand_in: tuple[str, FastAPI]) -> AsyncIterator[Ports]:
    dsn = migrated_dsn("PAYMENT_DATABASE_URL", kit.MIGRATIONS)
    async with open_ports(request.param, fakes, dsn, simulator_url, stand_in) as opened:
        yield opened
