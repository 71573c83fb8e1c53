"""JWT per RFC 8725 (docs/security.md): HS256 pinned, iss/aud/exp required."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Literal

import jwt
import orjson

ISSUER = "ticketing"
AUDIENCE = "ticketing"
ALGORITHM = "HS256"
Role = Literal["customer", "admin", "service"]
ROLES: tuple[Role, ...] = ("customer", "admin", "service")


@dataclass(frozen=True)
class Principal:
    sub: str
    role: Role

    @property
    def customer_id(self) -> int:
        return int(self.sub)


class InvalidToken(Exception):
    pass


def issue_token(secret: str, *, sub: str, role: Role, ttl_seconds: int = 3600) -> str:
    now = int(time.time())
    claims = {"sub": sub, "role": role, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl_seconds}
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_token(secret: str, token: str) -> Principal:
    try:
        claims = jwt.decode(token, secret, algorithms=[ALGORITHM], audience=AUDIENCE, issuer=ISSUER,
                            options={"require": ["exp", "sub", "role", "iss", "aud"]})
    except jwt.PyJWTError as exc:
        raise InvalidToken(str(exc)) from exc
    role, sub = claims.get("role"), claims.get("sub")
    if role not in ROLES or not isinstance(sub, str) or not sub.isdecimal():
        raise InvalidToken("role must be customer|admin|service and sub a decimal string")
    return Principal(sub=sub, role=role)


# Verified tokens remembered by their exact text: PyJWT's HMAC check was a noticeable share of a worker's CPU on the
# hold path. A hit needs the identical token string (signature included) and secret; an entry lives until
# the token's own `exp` or CACHE_SECONDS, whichever is sooner, so an expired token is never accepted.
CACHE_SECONDS, MAX_CACHED_TOKENS = 60.0, 20_000
_verified: dict[tuple[str, str], tuple[Principal, float]] = {}


def verify_token_cached(secret: str, token: str) -> Principal:
    """`verify_token`, remembered; raises InvalidToken like it (nothing is cached then)."""
    now = time.time()
    hit = _verified.get((secret, token))
    if hit is not None and now < hit[1]:
        return hit[0]
    principal = verify_token(secret, token)
    payload = token.split(".")[1]
    exp = float(orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
    if len(_verified) >= MAX_CACHED_TOKENS:
        _verified.pop(next(iter(_verified)))  # the oldest entry (dicts keep insertion order)
    _verified[(secret, token)] = (principal, min(exp, now + CACHE_SECONDS))
    return principal
