"""payment-service's `GET /payments/{paymentId}` with a service token (the Payments port)."""

from __future__ import annotations

import uuid

import httpx
from ticketing import http_pool, request_id
from ticketing.auth import issue_token

from voucher_service.domain.errors import PaymentsUnavailable
from voucher_service.domain.model import PAYMENT_STATUSES
from voucher_service.service_layer.ports import Payments


class HttpPayments(Payments):
    def __init__(self, base_url: str, *, jwt_secret: str, timeout: float,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._secret = jwt_secret
        self._client = httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport,
                                         limits=http_pool.LIMITS)

    async def status(self, payment_id: str) -> str | None:
        try:
            canonical = uuid.UUID(payment_id)
        except ValueError:
            return None  # payment ids are UUIDs: no payment can have this one
        # Minted per call (cheap), so a long-running worker never sends an expired token.
        token = issue_token(self._secret, sub="0", role="service", ttl_seconds=300)
        try:
            headers = {"Authorization": f"Bearer {token}"}
            if (rid := request_id.current()) is not None:
                headers[request_id.HEADER] = rid
            response = await self._client.get(f"/payments/{canonical}", headers=headers)
        except httpx.HTTPError as exc:  # refused, timed out, reset
            raise PaymentsUnavailable(f"payment-service: {type(exc).__name__}: {exc}") from exc
        body = _json(response)
        # Only the contract's own 404 means "never recorded": a proxy's or a wrong host's 404 page must not
        # make the expiry release paid uses.
        if response.status_code == 404 and body.get("error") == "NOT_FOUND":
            return None
        status = body.get("status") if response.status_code == 200 else None
        if status not in PAYMENT_STATUSES:
            raise PaymentsUnavailable(f"payment-service answered HTTP {response.status_code}: {response.text[:200]}")
        return str(status)

    async def close(self) -> None:
        await self._client.aclose()


def _json(response: httpx.Response) -> dict[str, object]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
