"""Every call to the gateway carries the merchant's API key (GATEWAY_API_KEY); the gateway (the simulator, a
real process) answers nothing without it, which payment-service sees as the gateway being unavailable."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from payment_service.adapters.gateway import HttpGateway
from payment_service.adapters.http import ServiceClient, api_key
from payment_service.config import Settings
from payment_service.domain.errors import DependencyUnavailable
from payment_service.domain.model import Payment
from ticketing_testing import merchant_auth

pytestmark = pytest.mark.integration


def payment() -> Payment:
    return Payment(payment_id=uuid.uuid4(), hold_id=uuid.uuid4(), booking_id=uuid.uuid4(), customer_id=7,
                   showtime_id=42, amount_cents=2400, discount_cents=0, voucher_code=None, status="PENDING",
                   expires_at=datetime.now(UTC) + timedelta(minutes=5))


async def test_every_gateway_call_carries_the_api_key(simulator_url: str) -> None:
    gateway = HttpGateway(ServiceClient(simulator_url, credentials=api_key(Settings().gateway_api_key), timeout=5,
                                        name="gateway"))
    paid = payment()
    session = await gateway.create_session(paid, "http://127.0.0.1:9/payments/callback")
    assert (await gateway.get_session(session.session_id)).status == "open"
    async with httpx.AsyncClient() as c:  # the customer pays on the hosted page (no key there)
        r = await c.post(f"{simulator_url}/sim/sessions/{session.session_id}/pay",
                         json={"outcome": "succeeded", "delivery": "never"})
        assert r.status_code == 200, r.text
    refund = await gateway.refund(session.session_id, paid.payment_id, 2400)
    assert await gateway.refund(session.session_id, paid.payment_id, 2400) == refund  # retried: the same refund
    assert (await gateway.cancel_session(session.session_id)).status == "paid"
    async with httpx.AsyncClient(headers=merchant_auth()) as c:
        listed = (await c.get(f"{simulator_url}/sim/sessions")).json()
    assert session.session_id in {s["sessionId"] for s in listed}

    wrong = HttpGateway(ServiceClient(simulator_url, credentials=api_key("not-the-merchant-key"), timeout=5,
                                      name="gateway"))
    for call in (wrong.create_session(payment(), "http://127.0.0.1:9/cb"), wrong.get_session(session.session_id),
                 wrong.cancel_session(session.session_id), wrong.refund(session.session_id, paid.payment_id, 1)):
        with pytest.raises(DependencyUnavailable, match="401"):
            await call
