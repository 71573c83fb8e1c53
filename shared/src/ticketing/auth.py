"""Bearer tokens per RFC 8725: the claims every token must carry, and our own HS256 tokens.

Our tokens (dev tokens from `ticketing token`, the services' own calls to each other) are HS256 with
JWT_SECRET, issuer and audience `ticketing`. A chain's identity provider signs its customers' tokens with
keys it publishes (ticketing.jwks); ticketing.tokens accepts both, each with its algorithm pinned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import jwt
from jwt.algorithms import HMACAlgorithm

ISSUER = "ticketing"
AUDIENCE = "ticketing"
ALGORITHM = "HS256"
Role = Literal["customer", "admin", "service", "staff"]  # staff: door scanners (POST /checkins)
ROLES: tuple[Role, ...] = ("customer", "admin", "service", "staff")
REQUIRED_CLAIMS = ["exp", "sub", "role", "iss", "aud"]
PROVIDER_CLAIMS = ["exp", "sub", "iss", "aud"]  # a provider's role is where JWT_ROLES_CLAIM says (ticketing.identity)
MAX_SUB = 2**63 - 1


@dataclass(frozen=True)
class Principal:
    sub: str
    role: Role

    @property
    def customer_id(self) -> int:
        return int(self.sub)


class InvalidToken(Exception):
    pass


class VettedHmac(HMACAlgorithm):
    """HMAC whose keys are vetted once each. PyJWT vets an HMAC key at every token's check, to refuse an asymmetric
    key used as a secret (it tries it as PEM, SSH, DER and JSON): about a third of a fresh token's check, on our
    own few secrets every time. A key that passed is kept, up to KEYS_KEPT; one refused is refused each time.
    Which key checks a token is the caller's choice, never the token's."""

    KEYS_KEPT = 8

    def __init__(self, hash_alg: Any) -> None:
        super().__init__(hash_alg)
        self._vetted: dict[str | bytes, bytes] = {}

    def prepare_key(self, key: str | bytes) -> bytes:
        if not isinstance(key, str | bytes):
            return super().prepare_key(key)
        vetted = self._vetted.get(key)
        if vetted is None:
            vetted = super().prepare_key(key)
            if len(self._vetted) < self.KEYS_KEPT:
                self._vetted[key] = vetted
        return vetted


# Through PyJWT's own extension point (jwt.register_algorithm): every HS256 check and signature in the process.
jwt.unregister_algorithm(ALGORITHM)
jwt.register_algorithm(ALGORITHM, VettedHmac(HMACAlgorithm.SHA256))


def issue_token(secret: str, *, sub: str, role: Role, ttl_seconds: int = 3600) -> str:
    now = int(time.time())
    claims = {"sub": sub, "role": role, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + ttl_seconds}
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def verify_token(secret: str, token: str) -> Principal:
    """One of our HS256 tokens; raises InvalidToken."""
    return principal_of(decode_claims(token, secret, ALGORITHM, issuer=ISSUER, audience=AUDIENCE))


def decode_claims(token: str, key: Any, algorithm: str, *, issuer: str, audience: str,
                  required: list[str] | None = None) -> dict[str, Any]:
    """The claims of a token signed with `key` by `algorithm` (that one only), for that issuer and audience,
    with every required claim and not expired; raises InvalidToken."""
    try:
        claims: dict[str, Any] = jwt.decode(token, key, algorithms=[algorithm], audience=audience, issuer=issuer,
                                            options={"require": required or REQUIRED_CLAIMS})
    except jwt.PyJWTError as exc:
        raise InvalidToken(str(exc)) from exc
    return claims


def principal_of(claims: dict[str, Any]) -> Principal:
    """The caller a verified token names. `sub` must be ASCII digits: str.isdecimal() also takes other
    scripts' digits (Arabic-Indic seven, U+0667, is 7 to int()), which would make two texts one customer; and fit the
    databases' bigint."""
    role, sub = claims.get("role"), claims.get("sub")
    if role not in ROLES:
        raise InvalidToken(f"role must be {'|'.join(ROLES)}")
    if not (isinstance(sub, str) and sub.isascii() and sub.isdigit() and int(sub) <= MAX_SUB):
        raise InvalidToken("sub must be a customer id: ASCII digits")
    return Principal(sub=sub, role=role)
