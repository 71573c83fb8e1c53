"""The provider subjects' customer ids and contacts, in Postgres (sql/identities.sql): hold-service keeps the
mapping, the other services ask for it (POST /customer-ids), the notifier reads contacts
(GET /buyer-contacts/{bookingId})."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import asyncpg
from ticketing.db import Queries, sql_dir
from ticketing.identity import CustomerIds, ProviderContact

import hold_service

Q = Queries.load(sql_dir(hold_service.__file__) / "identities.sql")


@dataclass(frozen=True)
class BuyerContact:
    customer_id: int
    email: str | None
    email_verified: bool
    name: str | None
    locale: str | None


MAX_REMEMBERED = 100_000


class PgCustomerIds(CustomerIds):
    """A subject seen again with the same contact (its next token, another process' answer) costs no query: the
    id never changes, and the contact is written only when it did."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self._known: dict[tuple[str, str], tuple[ProviderContact, int]] = {}  # the contact this process last wrote

    async def resolve(self, issuer: str, subject: str, contact: ProviderContact) -> int:
        known = self._known.get((issuer, subject))
        if known is not None and known[0] == contact:
            return known[1]
        customer_id = await self._resolved(issuer, subject, contact)
        if len(self._known) >= MAX_REMEMBERED:
            self._known.pop(next(iter(self._known)))
        self._known[(issuer, subject)] = (contact, customer_id)
        return customer_id

    async def _resolved(self, issuer: str, subject: str, contact: ProviderContact) -> int:
        async with self.pool.acquire() as conn:
            found = await conn.fetchval(Q.resolve_identity, issuer, subject, contact.email, contact.email_verified,
                                        contact.name, contact.locale)
            if found is None:  # the contact had not changed: nothing written
                found = await conn.fetchval(Q.resolve_identity_unchanged, issuer, subject)
        return int(found)

    async def contact(self, booking_id: uuid.UUID) -> BuyerContact | None:
        row = await self.pool.fetchrow(Q.buyer_contact, booking_id)
        if row is None:
            return None
        return BuyerContact(customer_id=row["customer_id"], email=row["email"],
                            email_verified=row["email_verified"], name=row["name"], locale=row["locale"])
