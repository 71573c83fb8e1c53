"""The payment gateway's REST API (the simulator locally; a real hosted-checkout gateway in production)."""

from __future__ import annotations

import uuid

import httpx

from payment_service.adapters.http import ServiceClient
from payment_service.domain.errors import DependencyUnavailable, GatewayRejected
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import Gateway, GatewaySession, GatewayState


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code == 404 or response.status_code == 409:
        raise GatewayRejected(f"gateway answered {response.status_code}: {response.text[:200]}")
    if response.status_code >= 300:
        raise DependencyUnavailable(f"gateway answered {response.status_code}")
    return response


def _state(body: dict[str, object]) -> GatewayState:
    return GatewayState(session_id=str(body["sessionId"]), status=str(body["status"]),
                        amount_cents=int(str(body["amountCents"])))


class HttpGateway(Gateway):
    def __init__(self, client: ServiceClient) -> None:
        self.client = client

    async def create_session(self, payment: Payment, callback_url: str) -> GatewaySession:
        # The payment id is both the reference and the Idempotency-Key: the gateway returns the session
        # it already created for it, which is what makes a checkout retried after a crash safe.
        body = {"amountCents": payment.amount_cents, "reference": str(payment.payment_id),
                "callbackUrl": callback_url, "expiresAt": payment.expires_at.isoformat()}
        response = _checked(await self.client.request(
            "POST", "/v1/sessions", json=body, headers={"Idempotency-Key": str(payment.payment_id)}))
        data = response.json()
        return GatewaySession(session_id=data["sessionId"], url=data["url"])

    async def get_session(self, session_id: str) -> GatewayState:
        return _state(_checked(await self.client.request("GET", f"/v1/sessions/{session_id}")).json())

    async def cancel_session(self, session_id: str) -> GatewayState:
        return _state(_checked(await self.client.request("POST", f"/v1/sessions/{session_id}/cancel")).json())

    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        response = _checked(await self.client.request(
            "POST", f"/v1/sessions/{session_id}/refunds", json={"amountCents": amount_cents},
            headers={"Idempotency-Key": str(payment_id)}))
        return str(response.json()["refundId"])
