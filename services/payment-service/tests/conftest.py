"""Shared helpers for payment-service tests (the `kit` fixture): the fakes of the tests/fakes package (also the
`fakes` fixture), signed callbacks, the simulator."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import pytest_asyncio
import stripe
import uvicorn
from payment_service.config import Settings
from payment_service.entrypoints.api.app import get_application
from ticketing.auth import issue_token
from ticketing_testing import free_port, import_path, service_process

MIGRATIONS = Path(__file__).resolve().parents[1] / "src" / "payment_service" / "sql" / "migrations"
WEBHOOK_SECRET = "whsec_tests_only_0123456789abcdef0123"
LOGS = Path(__file__).resolve().parents[3] / "var" / "log" / "tests"
fakes = import_path(Path(__file__).with_name("fakes"), "payment_fakes")  # tests: the `fakes` fixture, or kit.fakes


def stocked_vouchers():  # type: ignore[no-untyped-def]
    """The vouchers the API tests use: TEN (500 off) and GONE (no use left)."""
    vouchers = fakes.FakeVouchers()
    vouchers.add("TEN", 500)
    vouchers.add("GONE", 500, limit=0)
    return vouchers


def signed(body: dict[str, object], secret: str = WEBHOOK_SECRET, t: int | None = None) -> tuple[bytes, str]:
    """The body and its Stripe-Signature, made by the SDK's own test helper."""
    raw = json.dumps(body)
    return raw.encode(), stripe.WebhookSignature.generate_signature_header(raw, secret, timestamp=t)


def callback_body(session_id: str, payment_id: str, kind: str = "checkout.session.completed",
                  amount: int = 2400) -> dict[str, object]:
    """A Stripe event about a Checkout Session (only the ids matter: Stripe's current state decides)."""
    return {"id": f"evt_{uuid.uuid4().hex}", "object": "event", "type": kind, "created": int(time.time()),
            "livemode": False, "data": {"object": {"id": session_id, "object": "checkout.session",
                                                   "client_reference_id": payment_id, "amount_total": amount,
                                                   "metadata": {"paymentId": payment_id}}}}


def unique_customer() -> int:
    return 10**11 + uuid.uuid4().int % 10**11  # random, so runs and tests never share a customer


@pytest.fixture(scope="session")
def payment_port() -> int:
    """payment-service's port in these tests: known first, since the simulator sends its webhooks there."""
    return free_port()


@pytest.fixture(scope="session")
def simulator_url(payment_port: int) -> Iterator[str]:
    port = free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    env = {"GATEWAY_SIMULATOR_PORT": str(port), "GATEWAY_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, "CALLBACK_BACKOFF_INITIAL": "0.2",
           "SIM_WEBHOOK_URL": f"http://127.0.0.1:{payment_port}/payments/callback"}
    with service_process(["-m", "gateway_simulator"], env, ready_url=f"http://127.0.0.1:{port}/healthz",
                         log_path=LOGS / "gateway-simulator.log"):
        yield f"http://127.0.0.1:{port}"


@dataclass
class Api:
    url: str
    settings: Settings
    holds: Any
    vouchers: Any
    app: object

    def token(self, customer_id: int) -> dict[str, str]:
        token = issue_token(self.settings.jwt_secret, sub=str(customer_id), role="customer")
        return {"Authorization": f"Bearer {token}"}

    @property
    def service(self):  # type: ignore[no-untyped-def]
        return self.app.state.service  # type: ignore[attr-defined]

    @property
    def deps(self):  # type: ignore[no-untyped-def]
        return self.app.state.deps  # type: ignore[attr-defined]


@pytest_asyncio.fixture(scope="session")
async def payment_api(migrated_dsn, simulator_url, payment_port) -> AsyncIterator[Api]:  # type: ignore[no-untyped-def]
    dsn = migrated_dsn("PAYMENT_DATABASE_URL", MIGRATIONS)
    port = payment_port
    settings = Settings(database_url=dsn, stripe_webhook_secret=WEBHOOK_SECRET, stripe_api_base=simulator_url,
                        db_pool_max=15)
    holds, vouchers = fakes.FakeHoldDirectory(), stocked_vouchers()
    app = get_application(settings, holds=holds, vouchers=vouchers)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient() as client:
        for _ in range(100):
            try:
                if (await client.get(f"{url}/healthz")).status_code == 200 and server.started:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    yield Api(url=url, settings=settings, holds=holds, vouchers=vouchers, app=app)
    server.should_exit = True
    await task


@pytest.fixture(scope="session", name="fakes")
def fakes_fixture() -> ModuleType:
    """tests/fakes (test modules cannot import it by its folder's name under --import-mode=importlib)."""
    return fakes


@pytest.fixture(scope="session")
def kit():  # type: ignore[no-untyped-def]
    """This module: fakes and signing helpers for test files (importlib mode has no `import conftest`)."""
    return sys.modules[__name__]
