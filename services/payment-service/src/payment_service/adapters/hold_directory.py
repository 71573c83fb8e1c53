"""hold-service's `GET /holds/{holdId}`, read with a service token."""

from __future__ import annotations

import uuid
from datetime import datetime

from payment_service.adapters.http import ServiceClient
from payment_service.domain.errors import DependencyUnavailable
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
        return Hold(hold_id=uuid.UUID(body["holdId"]), booking_id=uuid.UUID(body["bookingId"]),
                    customer_id=int(body["customerId"]), showtime_id=int(body["showtimeId"]),
                    status=body["status"], expires_at=datetime.fromisoformat(body["expiresAt"]),
                    amount_cents=int(body["amountCents"]))
