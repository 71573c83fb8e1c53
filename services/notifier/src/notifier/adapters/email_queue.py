"""The e-mail queue the sender works through (table `email_outbox`), one transaction per e-mail.

`EmailQueue` is the sender's port: claim the next due e-mail (locked, `FOR UPDATE SKIP LOCKED`, so two
senders never send the same row at once), then record what happened to it. `Transactions` opens one
transaction and hands a queue bound to it; leaving without an exception commits.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from ticketing.db import Queries, sql_dir

from notifier.adapters.repository import Connection
from notifier.domain.rendering import RenderedEmail

QUERIES = Queries.load(sql_dir(str(Path(__file__).resolve().parent)) / "emails.sql")
ERROR_MAX_CHARS = 1000


@dataclass(frozen=True)
class DueEmail:
    id: int
    message_id: str
    attempts: int  # before the one about to be made
    age_seconds: float  # since queued (or re-queued by an operator)
    rendered: RenderedEmail


class EmailQueue(abc.ABC):
    @abc.abstractmethod
    async def claim_due(self) -> DueEmail | None:
        """The oldest pending e-mail whose next attempt is due, locked until the transaction ends."""

    @abc.abstractmethod
    async def mark_sent(self, email_id: int) -> None: ...

    @abc.abstractmethod
    async def defer(self, email_id: int, error: str, delay_seconds: float) -> None:
        """Count the failed attempt; the e-mail is due again after `delay_seconds`."""

    @abc.abstractmethod
    async def mark_failed(self, email_id: int, reason: str, error: str) -> None:
        """Count the attempt and give up: FAILED with the reason, skipped by later passes."""


Transactions = Callable[[], AbstractAsyncContextManager[EmailQueue]]


class PgEmailQueue(EmailQueue):
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def claim_due(self) -> DueEmail | None:
        row = await self.conn.fetchrow(QUERIES.claim_due_email)
        if row is None:
            return None
        ascii_message = row["message_ascii"]
        rendered = RenderedEmail(row["recipient"], bytes(row["message"]), row["recipient_ascii"],
                                 None if ascii_message is None else bytes(ascii_message))
        return DueEmail(row["id"], row["message_id"], row["attempts"], row["age_seconds"], rendered)

    async def mark_sent(self, email_id: int) -> None:
        await self.conn.execute(QUERIES.mark_email_sent, email_id)

    async def defer(self, email_id: int, error: str, delay_seconds: float) -> None:
        await self.conn.execute(QUERIES.defer_email, email_id, error[:ERROR_MAX_CHARS], delay_seconds)

    async def mark_failed(self, email_id: int, reason: str, error: str) -> None:
        await self.conn.execute(QUERIES.fail_email, email_id, reason, error[:ERROR_MAX_CHARS])


def pg_transactions(pool: asyncpg.Pool) -> Transactions:
    @asynccontextmanager
    async def begin() -> AsyncIterator[EmailQueue]:
        async with pool.acquire() as conn, conn.transaction():
            yield PgEmailQueue(conn)
    return begin


@dataclass(frozen=True)
class FailedEmail:
    id: int
    kind: str
    customer_id: int
    recipient: str
    failure_reason: str
    event_json: str | None  # None: queued before events were kept with the e-mail
    rendered: bool


class PgEmailAdmin:
    """The operator's side of the queue (`python -m notifier.emails`); the caller owns the transaction."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def lock_failed(self, email_id: int) -> FailedEmail | None:
        row = await self.conn.fetchrow(QUERIES.lock_failed_email, email_id)
        if row is None:
            return None
        return FailedEmail(row["id"], row["kind"], row["customer_id"], row["recipient"], row["failure_reason"],
                           row["event"], row["rendered"])

    async def status(self, email_id: int) -> str | None:
        status: str | None = await self.conn.fetchval(QUERIES.email_status, email_id)
        return status

    async def requeue_rendered(self, email_id: int, rendered: RenderedEmail) -> None:
        await self.conn.execute(QUERIES.requeue_rendered_email, email_id, rendered.recipient, rendered.message,
                                rendered.ascii_recipient, rendered.ascii_message)

    async def requeue_as_is(self, email_id: int) -> bool:
        return str(await self.conn.execute(QUERIES.requeue_email_as_is, email_id)).endswith(" 1")

    async def failed_ids(self, reason: str | None = None) -> list[int]:
        return [r["id"] for r in await self.conn.fetch(QUERIES.failed_email_ids, reason)]

    async def listing(self, status: str | None, limit: int) -> list[dict[str, object]]:
        return [dict(r) for r in await self.conn.fetch(QUERIES.list_emails, status, limit)]
