"""EmailAdmin: the operator's view of the failed e-mails of the fake queue."""

from __future__ import annotations

from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import (
    EmailAdmin,
    FailedEmail,
)

from .queue import FakeQueue


class FakeEmailAdmin(EmailAdmin):
    def __init__(self, queue: FakeQueue) -> None:
        self.queue = queue

    async def lock_failed(self, email_id: int) -> FailedEmail | None:
        row = next((r for r in self.queue.rows if r.id == email_id and r.status == "FAILED"), None)
        if row is None or row.email is None:
            return None
        return FailedEmail(row.id, row.email.kind, row.email.customer_id, row.recipient, row.reason or "",
                           row.email.event_json, row.rendered is not None)

    async def status(self, email_id: int) -> str | None:
        return next((r.status for r in self.queue.rows if r.id == email_id), None)

    async def requeue_rendered(self, email_id: int, rendered: RenderedEmail) -> None:
        row = self.queue.row(email_id)
        if row.status != "FAILED":  # only a FAILED e-mail is re-queued (sql/emails.sql)
            return
        row.rendered, row.recipient, row.status, row.attempts, row.reason = (rendered, rendered.recipient,
                                                                              "PENDING", 0, None)

    async def requeue_as_is(self, email_id: int) -> bool:
        row = self.queue.row(email_id)
        if row.status != "FAILED" or row.rendered is None:
            return False
        row.status, row.attempts, row.reason = "PENDING", 0, None
        return True

    async def failed_ids(self, reason: str | None = None) -> list[int]:
        return [r.id for r in self.queue.rows if r.status == "FAILED" and reason in (None, r.reason)]

    async def listing(self, status: str | None, limit: int) -> list[dict[str, object]]:
        rows = [r for r in reversed(self.queue.rows) if status in (None, r.status)]
        return [{"id": r.id, "status": r.status, "recipient": r.recipient} for r in rows[:limit]]
