"""The notifier's Postgres repository: customers, points ledger and queuing e-mails, on one connection.

It never opens a transaction: the caller (the idempotent consumer, or the sender) owns it, so the
inbox row, the points credit and the queued e-mail commit or roll back together.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from ticketing.db import Queries, sql_dir

from notifier.domain.messages import Contact
from notifier.domain.rendering import RenderedEmail

# A plain connection (CLIs) or a pooled one (worker); both speak the same API.
Connection = asyncpg.Connection | PoolConnectionProxy  # type: ignore[type-arg]

QUERIES = Queries.load(sql_dir(str(Path(__file__).resolve().parent)) / "notifier.sql")


@dataclass(frozen=True)
class QueuedEmail:
    event_id: uuid.UUID
    kind: str
    booking_id: uuid.UUID
    customer_id: int
    message_id: str
    event_json: str  # the booking event, so that an operator's re-queue can render it again


@dataclass(frozen=True)
class UnrenderableEmail:
    email: QueuedEmail
    recipient: str  # the directory's text, which could not be rendered
    reason: str  # metric label: invalid_address, unrenderable
    error: str


class NotifierRepository(abc.ABC):
    """The port the service layer writes through."""

    @abc.abstractmethod
    async def get_customer(self, customer_id: int) -> Contact | None: ...

    @abc.abstractmethod
    async def credit_points(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID,
                            amount_cents: int, points: int) -> bool:
        """True if credited now, False if this booking was already credited."""

    @abc.abstractmethod
    async def enqueue_email(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        """True if queued now, False if this (event, kind) was already queued."""

    @abc.abstractmethod
    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        """Keep the e-mail as FAILED with the reason; True if recorded now, False if already there."""


class PgNotifierRepository(NotifierRepository):
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def get_customer(self, customer_id: int) -> Contact | None:
        row = await self.conn.fetchrow(QUERIES.get_customer, customer_id)
        return None if row is None else Contact(row["customer_id"], row["email"], row["name"], row["locale"])

    async def credit_points(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID,
                            amount_cents: int, points: int) -> bool:
        credited = await self.conn.fetchval(QUERIES.credit_points, booking_id, customer_id, event_id,
                                            amount_cents, points)
        return credited is not None

    async def enqueue_email(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        queued = await self.conn.fetchval(
            QUERIES.enqueue_email, email.event_id, email.kind, email.booking_id, email.customer_id,
            rendered.recipient, email.message_id, rendered.message, rendered.ascii_recipient,
            rendered.ascii_message, email.event_json)
        return queued is not None

    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        email = failed.email
        recorded = await self.conn.fetchval(
            QUERIES.enqueue_unrenderable_email, email.event_id, email.kind, email.booking_id, email.customer_id,
            failed.recipient, email.message_id, email.event_json, failed.reason, failed.error[:1000])
        return recorded is not None

    async def upsert_customer(self, contact: Contact) -> None:
        await self.conn.execute(QUERIES.upsert_customer, contact.customer_id, contact.email, contact.name,
                                contact.locale)

    async def list_customers(self) -> list[Contact]:
        rows = await self.conn.fetch(QUERIES.list_customers)
        return [Contact(r["customer_id"], r["email"], r["name"], r["locale"]) for r in rows]
