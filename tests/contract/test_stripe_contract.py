"""Every request the Stripe adapter makes is one Stripe takes: each call (create, retrieve, expire, refund) is
sent by the adapter, through the stripe SDK, to stripe-mock (Stripe's own mock, built from Stripe's OpenAPI
description; `make contract-tools` builds it), which refuses any parameter Stripe would refuse. The same
calls against the simulator give objects of the same shape."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from payment_service.adapters.stripe_provider import StripeGateway
from payment_service.config import Settings
from payment_service.domain.errors import GatewayRejected
from payment_service.domain.model import Payment
from ticketing_testing import REPO_ROOT, free_port, merchant_auth, require, service_process, stop_process

STRIPE_MOCK = Path(REPO_ROOT) / "var" / "contract" / "bin" / "stripe-mock"
KEY = "sk_test_contract"
# What payment-service reads of a Checkout Session (adapters/stripe_provider.py), and of a Refund.
SESSION_FIELDS = {"id": str, "object": str, "status": str, "payment_status": str, "amount_total": int,
                  "client_reference_id": str, "metadata": dict, "url": str, "livemode": bool}


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, "stripe-mock exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("stripe-mock did not start")


@pytest.fixture(scope="module")
def stripe_mock() -> Iterator[str]:
    require("stripe-mock", STRIPE_MOCK.exists(), "run `make contract-tools`")
    port = free_port()
    proc = subprocess.Popen([str(STRIPE_MOCK), "-http-addr", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def simulator() -> Iterator[str]:
    port = free_port()
    env = {"GATEWAY_SIMULATOR_PORT": str(port), "GATEWAY_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "SIM_WEBHOOK_URL": f"http://127.0.0.1:{free_port()}/payments/callback"}
    with service_process(["-m", "gateway_simulator"], env, ready_url=f"http://127.0.0.1:{port}/healthz"):
        yield f"http://127.0.0.1:{port}"


def payment() -> Payment:
    return Payment(payment_id=uuid.uuid4(), hold_id=uuid.uuid4(), booking_id=uuid.uuid4(), customer_id=7,
                   showtime_id=42, amount_cents=2400, discount_cents=0, voucher_code=None, status="PENDING",
                   expires_at=datetime.now(UTC) + timedelta(minutes=8))


def adapter(base: str, key: str = KEY) -> StripeGateway:
    return StripeGateway(Settings(stripe_api_base=base, stripe_api_key=key, currency="EUR", _env_file=None),
                         timeout=10)


async def test_every_call_the_adapter_makes_is_accepted_by_stripe_mock(stripe_mock: str) -> None:
    gateway = adapter(stripe_mock)
    paid = payment()
    session = await gateway.create_session(paid)
    assert session.session_id.startswith("cs_") and session.url.startswith("https://")
    state = await gateway.get_session(session.session_id)  # retrieve, its PaymentIntent expanded
    assert state.session_id.startswith("cs_")
    await gateway.cancel_session(session.session_id)  # expire
    assert (await gateway.refund(session.session_id, paid.payment_id, paid.amount_cents)).startswith("re_")


async def test_stripe_mock_refuses_a_misnamed_parameter(stripe_mock: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check has teeth: the create with one parameter misnamed is refused (400), as Stripe would."""
    gateway = adapter(stripe_mock)
    params = gateway.session_params

    def misnamed(payment: Payment) -> dict[str, Any]:
        return {("client_reference" if k == "client_reference_id" else k): v for k, v in params(payment).items()}

    monkeypatch.setattr(gateway, "session_params", misnamed)
    with pytest.raises(GatewayRejected, match="400"):
        await gateway.create_session(payment())


async def test_the_simulator_answers_the_same_calls_in_the_same_shapes(stripe_mock: str, simulator: str) -> None:
    shapes = []
    for base, key in ((stripe_mock, KEY), (simulator, merchant_auth()["Authorization"].split(" ", 1)[1])):
        gateway, paid = adapter(base, key), payment()
        session = await gateway.create_session(paid)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as c:
            if base == simulator:
                await c.post(f"{base}/sim/sessions/{session.session_id}/pay",
                             json={"outcome": "succeeded", "delivery": "never"})
            body = (await c.get(f"{base}/v1/checkout/sessions/{session.session_id}",
                                params={"expand[]": "payment_intent"})).json()
        assert set(SESSION_FIELDS) <= set(body), (base, set(SESSION_FIELDS) - set(body))
        # Stripe's nullable fields (stripe-mock's fixtures leave them null): their type when present.
        body = {**body, **{name: kind() for name, kind in SESSION_FIELDS.items() if body.get(name) is None}}
        shapes.append({name: type(body[name]).__name__ for name in SESSION_FIELDS if name in body})
        assert isinstance(body["payment_intent"], dict | None), base
        assert (await gateway.refund(session.session_id, paid.payment_id, paid.amount_cents)).startswith("re_")
    mock, sim = shapes
    assert mock == sim == {name: kind.__name__ for name, kind in SESSION_FIELDS.items()}
