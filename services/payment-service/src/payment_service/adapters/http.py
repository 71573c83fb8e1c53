"""Calling other services over HTTP: short timeouts, a service JWT, failures as DependencyUnavailable."""

from __future__ import annotations

from typing import Any

import httpx
from ticketing import request_id, tracing
from ticketing.auth import issue_token

from payment_service.domain.errors import DependencyUnavailable


class ServiceClient:
    def __init__(self, base_url: str, *, jwt_secret: str | None, timeout: float, name: str) -> None:
        self.name = name
        self._jwt_secret = jwt_secret
        self._client = httpx.AsyncClient(base_url=base_url, timeout=timeout)

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        if self._jwt_secret is not None:
            # Minted per call (cheap) so it never expires in a long-running worker.
            token = issue_token(self._jwt_secret, sub="0", role="service", ttl_seconds=300)
            headers["Authorization"] = f"Bearer {token}"
        if (rid := request_id.current()) is not None:  # one booking followed across the services
            headers[request_id.HEADER] = rid
        headers.update(tracing.propagation_headers())  # the callee's span is a child of ours
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
