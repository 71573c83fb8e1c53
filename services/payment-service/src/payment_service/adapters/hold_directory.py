"""hold-service's `GET /holds/{holdId}` and `POST /holds/{holdId}/extend`, called with a service token."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx

from payment_service.adapters.http import ServiceClient
from payment_service.domain.errors import DependencyUnavailable, HoldNotActive, HoldNotFound, ShowtimeClosed
from payment_service.domain.model import Hold
from payment_service.service_layer.ports import HoldDirectory


class HttpHoldDirectory(HoldDirectory):
    def __init__(self, client: ServiceClient) -> None:
        self.client = client

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        response = await self.client.request("GET", f"/holds/{hold_id}")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise DependencyUnavailable(f"hold-service answered {response.status_code}")
        body = response.json()
        created = body.get("createdAt")  # an optional field: a hold-service before it does not send it
        return Hold(hold_id=uuid.UUID(body["holdId"]), booking_id=uuid.UUID(body["bookingId"]),
                    customer_id=int(body["customerId"]), showtime_id=int(body["showtimeId"]),
                    status=body["status"], expires_at=datetime.fromisoformat(body["expiresAt"]),
                    amount_cents=int(body["amountCents"]),
                    created_at=datetime.fromisoformat(created) if created else None,
                    currency=body.get("currency"))

    async def extend(self, hold_id: uuid.UUID, customer_id: int, until: datetime) -> datetime:
        body = {"until": until.astimezone(UTC).isoformat(), "customerId": customer_id}
        response = await self.client.request("POST", f"/holds/{hold_id}/extend", json=body)
        if response.status_code == 404:
            raise HoldNotFound(str(hold_id))
        if response.status_code == 409 and _code(response) == "SHOWTIME_CLOSED":
            raise ShowtimeClosed(_message(response) or "sales of the showtime are closed")
        if response.status_code == 409:
            raise HoldNotActive(_message(response) or "the hold is not active")
        if response.status_code != 200:
            raise DependencyUnavailable(f"hold-service answered {response.status_code}")
        return datetime.fromisoformat(response.json()["expiresAt"])


def _message(response: httpx.Response) -> str:
    return _field(response, "message")


def _code(response: httpx.Response) -> str:
    return _field(response, "error")


def _field(response: httpx.Response, name: str) -> str:
    try:
        return str(response.json().get(name, ""))
    except (ValueError, AttributeError):
        return ""
