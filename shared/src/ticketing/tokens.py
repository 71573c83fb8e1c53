"""The bearer tokens a service accepts: ours (HS256, JWT_SECRET) and, with JWT_JWKS_URL, an identity
provider's (RS256, ES256, EdDSA, issuer JWT_ISSUER, audience JWT_AUDIENCE). Every token needs `exp`, `sub`,
`iss` and `aud`; ours also `role` and a `sub` of ASCII digits. A provider's role and customer id are read through
the claim mapping of ticketing.identity (JWT_ROLES_CLAIM, JWT_ROLE_MAP, JWT_CUSTOMER_ID_CLAIM, or the
subject mapped to our id at its first sign-in).

The token's header only says which of the two checks applies: HS256 is checked with our secret alone and
its `kid` is ignored; any other `alg` needs the provider's key named by `kid` and must be that key's own
algorithm. So an HS256 token cannot be checked with a provider's public key, nor an RS256 token with
another kind of key, and `none` is refused by both.

Verified tokens are remembered by their exact text, so that a customer's requests pay the signature check
once (every hold request carries its token): an entry lives until the token's own `exp` or CACHE_SECONDS,
whichever is sooner, so an expired token is never accepted. A token seen for the first time still has its header
read only once per header: an issuer signs all its tokens under a few headers, and the header decides nothing
but which check applies (the check reads the whole token again), so its decoded form is kept by its text, up to
HEADERS_KEPT of them.
"""

from __future__ import annotations

import time
from typing import Any

import jwt

from ticketing.auth import (
    ALGORITHM,
    AUDIENCE,
    ISSUER,
    PROVIDER_CLAIMS,
    InvalidToken,
    Principal,
    decode_claims,
    principal_of,
)
from ticketing.identity import ClaimMapping, CustomerIds, ProviderContact
from ticketing.jwks import JwksKeys
from ticketing.settings import TokenSettings

CACHE_SECONDS, MAX_CACHED_TOKENS = 60.0, 20_000
HEADERS_KEPT = 64  # an issuer's few headers (ours, one per provider key); made-up ones are read each time


class TokenVerifier:
    def __init__(self, secret: str, *, jwks: JwksKeys | None = None, issuer: str = "",
                 audience: str = "", mapping: ClaimMapping | None = None,
                 customer_ids: CustomerIds | None = None) -> None:
        self.secret, self.jwks, self.issuer, self.audience = secret, jwks, issuer, audience
        self.mapping = mapping or ClaimMapping()
        self.customer_ids = customer_ids  # hold-service sets its own (Postgres) at start
        self._verified: dict[str, tuple[Principal, float]] = {}
        self._headers: dict[str, dict[str, Any]] = {}  # a header's base64url text -> its decoded, validated form

    @classmethod
    def from_settings(cls, settings: TokenSettings) -> TokenVerifier:
        jwks = None
        if settings.jwt_jwks_url:
            jwks = JwksKeys(settings.jwt_jwks_url, max_age=settings.jwt_jwks_cache_seconds,
                            cooldown=settings.jwt_jwks_refresh_cooldown_seconds,
                            timeout=settings.dependency_timeout_seconds)
        mapping = ClaimMapping(roles_claim=settings.jwt_roles_claim, role_map=settings.jwt_role_map or None,
                               customer_id_claim=settings.jwt_customer_id_claim)
        customer_ids = None
        if settings.customer_ids_url:
            from ticketing.customer_ids import RemoteCustomerIds
            customer_ids = RemoteCustomerIds(settings.customer_ids_url, secret=settings.jwt_secret,
                                             timeout=settings.dependency_timeout_seconds)
        return cls(settings.jwt_secret, jwks=jwks, issuer=settings.jwt_issuer, audience=settings.jwt_audience,
                   mapping=mapping, customer_ids=customer_ids)

    async def verify(self, token: str) -> Principal:
        """The caller the token names; raises InvalidToken (401), or KeysUnavailable (503) when the
        provider's keys cannot be read."""
        now = time.time()
        hit = self._verified.get(token)
        if hit is not None and now < hit[1]:
            return hit[0]
        header = self._header(token)
        if header.get("alg") == ALGORITHM:
            claims = decode_claims(token, self.secret, ALGORITHM, issuer=ISSUER, audience=AUDIENCE)
            principal = principal_of(claims)
        else:
            claims = await self._provider_claims(token, header)
            principal = await self._provider_principal(claims)
        exp = float(claims["exp"])
        if len(self._verified) >= MAX_CACHED_TOKENS:
            self._verified.pop(next(iter(self._verified)))  # the oldest entry (dicts keep insertion order)
        self._verified[token] = (principal, min(exp, now + CACHE_SECONDS))
        return principal

    def _header(self, token: str) -> dict[str, Any]:
        """The token's header, read once per header text (a quarter of a first check's time, measured)."""
        text = token.partition(".")[0]
        header = self._headers.get(text)
        if header is None:
            try:
                header = jwt.get_unverified_header(token)
            except jwt.PyJWTError as exc:
                raise InvalidToken(str(exc)) from exc
            if len(self._headers) < HEADERS_KEPT:
                self._headers[text] = header
        return header

    async def _provider_claims(self, token: str, header: dict[str, Any]) -> dict[str, Any]:
        if self.jwks is None:
            raise InvalidToken(f"algorithm {header.get('alg')!r} is not accepted")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("a token of the identity provider must name its key (kid)")
        key = await self.jwks.key(kid)
        if key is None:
            raise InvalidToken(f"no signing key {kid[:64]!r} is published by the identity provider")
        return decode_claims(token, key.key, key.algorithm_name, issuer=self.issuer, audience=self.audience,
                             required=PROVIDER_CLAIMS)

    async def _provider_principal(self, claims: dict[str, Any]) -> Principal:
        """The role through the claim mapping; the customer id stated by the token, else the subject's id of
        ours (made at its first sign-in; its contact kept with it)."""
        role = self.mapping.role(claims)
        sub = self.mapping.customer_id(claims)
        if sub is None:
            if self.customer_ids is None:
                raise InvalidToken("the token's subject is not a customer id and no mapping is configured")
            sub = str(await self.customer_ids.resolve(str(claims["iss"]), str(claims["sub"]),
                                                      ProviderContact.of(claims)))
        return principal_of({"sub": sub, "role": role})
