"""What an identity provider's token says of its holder, besides the signature (ticketing.tokens checks that).

- Role: read from the claim JWT_ROLES_CLAIM (a dotted path such as Keycloak's `realm_access.roles`; a string or a
  list of strings there), each value renamed through JWT_ROLE_MAP (provider's name -> ours; a name not in a
  non-empty map is ignored). Of the roles found the strongest wins: admin, then staff, then customer. `service`
  is never taken from a provider: only our own HS256 tokens name it.
- Customer id: a provider's `sub` is usually not a number. With JWT_CUSTOMER_ID_CLAIM the id is read from that
  claim (ASCII digits). Else a `sub` of ASCII digits is the id (a provider that issues our ids). Else the
  (issuer, sub) pair is mapped to an id of ours the first time it is seen (hold-service keeps the mapping; the
  other services ask it), so a first-time customer can buy at once.
- Contact: the standard claims `email`, `email_verified`, `name` and `locale`, kept by hold-service with the
  mapping each time a new token is seen: that is where the notifier finds the buyer's address.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

from ticketing.auth import ROLES, InvalidToken, Role

STRENGTH: tuple[Role, ...] = ("admin", "staff", "customer")


@dataclass(frozen=True)
class ProviderContact:
    """The buyer's contact as the provider's token states it (any field may be missing)."""

    email: str | None = None
    email_verified: bool = False
    name: str | None = None
    locale: str | None = None

    @classmethod
    def of(cls, claims: dict[str, Any]) -> ProviderContact:
        def text(name: str, limit: int) -> str | None:
            value = claims.get(name)
            return value[:limit] if isinstance(value, str) and value.strip() else None
        return cls(email=text("email", 320), email_verified=claims.get("email_verified") is True,
                   name=text("name", 200), locale=text("locale", 35))


class CustomerIds(abc.ABC):
    """Our customer id of a provider's subject, made at its first sign-in and the same ever after."""

    @abc.abstractmethod
    async def resolve(self, issuer: str, subject: str, contact: ProviderContact) -> int: ...


@dataclass(frozen=True)
class ClaimMapping:
    roles_claim: str = "role"
    role_map: dict[str, str] | None = None
    customer_id_claim: str = ""

    def role(self, claims: dict[str, Any]) -> Role:
        found = set()
        for name in _names(_at_path(claims, self.roles_claim)):
            ours = (self.role_map or {}).get(name) if self.role_map else name
            if ours in ROLES and ours != "service":
                found.add(ours)
        for role in STRENGTH:
            if role in found:
                return role
        raise InvalidToken(f"no role of ours ({', '.join(STRENGTH)}) in claim {self.roles_claim!r}")

    def customer_id(self, claims: dict[str, Any]) -> str | None:
        """Our customer id when the token states it (the claim, or a numeric `sub`); None: map the subject."""
        if self.customer_id_claim:
            value = _at_path(claims, self.customer_id_claim)
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise InvalidToken(f"claim {self.customer_id_claim!r} (our customer id) is missing")
            return value
        sub = claims.get("sub")
        return sub if isinstance(sub, str) and sub.isascii() and sub.isdigit() else None


def _at_path(claims: dict[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
