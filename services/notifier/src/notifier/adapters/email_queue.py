"""The e-mail queue (table `email_outbox`) in Postgres: the handlers', the sender's and the operator's side."""

from __future__ import annotations

from pathlib import Path

from ticketing.db import Queries, sql_dir
from ticketing.unit_of_work import Conn

from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import (
    DueEmail,
    EmailAdmin,
    EmailQueue,
    FailedEmail,
    QueuedEmail,
    UnrenderableEmail,
)

QUERIES = Queries.load(sql_dir(str(Path(__file__).resolve().parent)) / "emails.sql")
ERROR_MAX_CHARS = 1000


class PgEmailQueue(EmailQueue):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def enqueue(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        queued = await self.conn.fetchval(
            QUERIES.enqueue_email, email.event_id, email.kind, email.booking_id, email.customer_id,
            rendered.recipient, email.message_id, rendered.message, rendered.ascii_recipient,
            rendered.ascii_message, email.event_json)
        return queued is not None

    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        email = failed.email
        recorded = await self.conn.fetchval(
            QUERIES.enqueue_unrenderable_email, email.event_id, email.kind, email.booking_id, email.customer_id,
            failed.recipient, email.message_id, email.event_json, failed.reason, failed.error[:ERROR_MAX_CHARS])
        return recorded is not None

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


class PgEmailAdmin(EmailAdmin):
    def __init__(self, conn: Conn) -> None:
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
