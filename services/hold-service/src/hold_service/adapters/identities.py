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


class PgCustomerIds(CustomerIds):
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def resolve(self, issuer: str, subject: str, contact: ProviderContact) -> int:
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
