"""An identity provider's signing keys, read from its JWKS URL (JWT_JWKS_URL) and cached.

- Read at the first token, then kept `max_age` seconds. A token whose `kid` is not in the set refreshes it
  at once (the provider rotated its keys), but at most once per `cooldown` seconds: tokens with made-up
  kids cannot make us call the provider more often than that.
- Only RS256, ES256 and EdDSA keys are taken, and each key fixes its own algorithm (its `alg`, or its type
  and curve): a token is checked only with the algorithm its key was made for, never an HMAC keyed with a
  public key (the RS/HS confusion of RFC 8725, 2.1).
- The provider down, slow or answering garbage: the keys already read are kept and used (logged); with
  none yet, KeysUnavailable, which the API answers 503 like any dependency that is down.
- Requests that need a refresh at the same moment share one fetch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import jwt

from ticketing.logs import log_action

logger = logging.getLogger(__name__)
ALGORITHMS = frozenset({"RS256", "ES256", "EdDSA"})
MAX_JWKS_BYTES = 256 * 1024

Fetch = Callable[[], Awaitable[dict[str, Any]]]


class KeysUnavailable(ConnectionError):
    """No key set could be read from the identity provider yet."""


class JwksKeys:
    def __init__(self, url: str, *, max_age: float = 600.0, cooldown: float = 30.0, timeout: float = 2.0,
                 fetch: Fetch | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.url, self.max_age, self.cooldown, self.timeout = url, max_age, cooldown, timeout
        self._fetch, self._clock = fetch or self._get, clock
        self._keys: dict[str, jwt.PyJWK] | None = None
        self._read_at = 0.0  # when the set was last read successfully
        self._tried_at = float("-inf")  # when a read was last attempted
        self._refresh: asyncio.Future[None] | None = None
        self.fetches = 0

    async def key(self, kid: str) -> jwt.PyJWK | None:
        """The key named `kid`, or None when the provider does not publish it."""
        now = self._clock()
        if self._keys is None or now - self._read_at >= self.max_age or (
                kid not in self._keys and now - self._tried_at >= self.cooldown):
            await self._refreshed()
        if self._keys is None:
            raise KeysUnavailable(f"the identity provider's keys ({self.url}) could not be read")
        return self._keys.get(kid)

    async def _refreshed(self) -> None:
        if self._refresh is None:
            self._refresh = asyncio.ensure_future(self._read())
            self._refresh.add_done_callback(self._done)
        await asyncio.shield(self._refresh)  # a request that gives up does not cancel the others' read

    def _done(self, _: asyncio.Future[None]) -> None:
        self._refresh = None

    async def _read(self) -> None:
        self._tried_at = self._clock()
        self.fetches += 1
        try:
            keys = _usable_keys(await self._fetch())
        except (httpx.HTTPError, ValueError, TypeError, KeyError, jwt.PyJWTError) as exc:
            log_action(logger, "auth.jwks_unreadable", str(exc)[:200], level=logging.WARNING, url=self.url,
                       error=type(exc).__name__, kept=len(self._keys or {}))
            return
        self._keys, self._read_at = keys, self._clock()
        log_action(logger, "auth.jwks_read", url=self.url, kids=sorted(keys))

    async def _get(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
            response = await client.get(self.url, headers={"Accept": "application/json"})
        response.raise_for_status()
        if len(response.content) > MAX_JWKS_BYTES:
            raise ValueError(f"the key set is over {MAX_JWKS_BYTES} bytes")
        body: dict[str, Any] = response.json()
        return body


def _usable_keys(jwks: dict[str, Any]) -> dict[str, jwt.PyJWK]:
    """kid -> key, for the signing keys of the algorithms we take; others (encryption keys, HS, RS512...)
    are left out rather than refusing the whole set."""
    keys: dict[str, jwt.PyJWK] = {}
    for data in jwks["keys"]:
        if not isinstance(data, dict) or not isinstance(data.get("kid"), str) or data.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(data)
        except jwt.PyJWTError:
            continue
        if key.algorithm_name in ALGORITHMS:
            keys[data["kid"]] = key
    return keys
