"""Calling other services over HTTP: short timeouts, credentials, failures as DependencyUnavailable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from ticketing import http_pool, request_id
from ticketing.auth import issue_token

from payment_service.domain.errors import DependencyUnavailable

Credentials = Callable[[], str]  # the Authorization header of one call


def service_token(secret: str) -> Credentials:
    """Our own services: a service JWT, minted per call (cheap) so it never expires in a long-running worker."""
    return lambda: f"Bearer {issue_token(secret, sub='0', role='service', ttl_seconds=300)}"


class ServiceClient:
    def __init__(self, base_url: str, *, credentials: Credentials | None, timeout: float, name: str) -> None:
        self.name = name
        self._credentials = credentials
        self._client = httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=http_pool.LIMITS)

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        if self._credentials is not None:
            headers["Authorization"] = self._credentials()
        if (rid := request_id.current()) is not None:  # one booking followed across the services
            headers[request_id.HEADER] = rid
        return headers

    async def request(self, method: str, path: str, *, json: Any = None,
                      headers: dict[str, str] | None = None) -> httpx.Response:
        try:
            response = await self._client.request(method, path, json=json, headers=self._headers(headers))
        except httpx.HTTPError as exc:  # refused, timed out, reset: the dependency is down
            raise DependencyUnavailable(f"{self.name}: {type(exc).__name__}") from exc
        if response.status_code >= 500:
            raise DependencyUnavailable(f"{self.name}: HTTP {response.status_code}")
        return response

    async def close(self) -> None:
        await self._client.aclose()
