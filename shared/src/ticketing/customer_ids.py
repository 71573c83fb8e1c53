"""Our customer id of a provider's subject, asked of hold-service (`POST /customer-ids`, a service token), which
keeps the mapping: what payment-service and voucher-service use (CUSTOMER_IDS_URL). An id never changes once
made, so each is remembered for the life of the process (bounded)."""

from __future__ import annotations

import httpx

from ticketing.auth import InvalidToken, issue_token
from ticketing.identity import CustomerIds, ProviderContact

MAX_REMEMBERED = 100_000


class RemoteCustomerIds(CustomerIds):
    def __init__(self, base_url: str, *, secret: str, timeout: float) -> None:
        self.base_url, self._secret, self.timeout = base_url.rstrip("/"), secret, timeout
        self._known: dict[tuple[str, str], int] = {}

    async def resolve(self, issuer: str, subject: str, contact: ProviderContact) -> int:
        known = self._known.get((issuer, subject))
        if known is not None:
            return known
        body = {"issuer": issuer, "subject": subject, "email": contact.email,
                "emailVerified": contact.email_verified, "name": contact.name, "locale": contact.locale}
        token = issue_token(self._secret, sub="0", role="service", ttl_seconds=300)
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:  # a cold path: once per subject
                response = await client.post(f"{self.base_url}/customer-ids", json=body,
                                             headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as exc:  # answered 503 like any dependency down (ticketing.transient)
            raise ConnectionError(f"hold-service could not be asked for a customer id: {exc}") from exc
        if response.status_code == 422:
            raise InvalidToken("hold-service refused the token's subject")
        if response.status_code != 200:
            raise ConnectionError(f"hold-service answered {response.status_code} for a customer id")
        customer_id = int(response.json()["customerId"])
        if len(self._known) >= MAX_REMEMBERED:
            self._known.pop(next(iter(self._known)))
        self._known[(issuer, subject)] = customer_id
        return customer_id
