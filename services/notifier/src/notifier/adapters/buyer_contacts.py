"""hold-service's GET /buyer-contacts/{bookingId} (X-Api-Key: CONTACTS_API_KEY): the buyer's address as his
identity provider stated it. Only a verified address is used; no contact (404) is no address."""

from __future__ import annotations

import uuid

import httpx

from notifier.domain.messages import Contact
from notifier.service_layer.ports import BuyerContacts


class HttpBuyerContacts(BuyerContacts):
    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout,
                                         headers={"X-Api-Key": api_key})

    async def of_booking(self, booking_id: uuid.UUID, customer_id: int) -> Contact | None:
        try:
            response = await self._client.get(f"/buyer-contacts/{booking_id}")
        except httpx.HTTPError as exc:  # a transient failure: the consumer tries the event again
            raise ConnectionError(f"hold-service's buyer contacts could not be read: {exc}") from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise ConnectionError(f"hold-service answered {response.status_code} for a buyer contact")
        body = response.json()
        if int(body["customerId"]) != customer_id or not body.get("email") or not body.get("emailVerified"):
            return None
        return Contact(customer_id=customer_id, email=body["email"], name=body.get("name") or "",
                       locale=body.get("locale") or "en")
