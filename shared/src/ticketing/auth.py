"""JWT per DESIGN.md section 3 and RFC 8725: HS256 pinned, iss/aud/exp required."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import jwt

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
