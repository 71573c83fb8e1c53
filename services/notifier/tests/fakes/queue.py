"""EmailQueue: the rows of `email_outbox` (its unique keys; due e-mails oldest first), in memory."""

from __future__ import annotations

from dataclasses import dataclass, field

from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import (
    DueEmail,
    EmailQueue,
    QueuedEmail,
    UnrenderableEmail,
)


@dataclass
class Row:
    """One e-mail of the queue, as `email_outbox` keeps it."""

    id: int
    recipient: str
    rendered: RenderedEmail | None = None
    status: str = "PENDING"
    attempts: int = 0
    due_at: float = 0.0
    age: float = 0.0
    reason: str | None = None
    error: str | None = None
    email: QueuedEmail | None = None


@dataclass
class FakeQueue(EmailQueue):
    rows: list[Row] = field(default_factory=list)
    now: float = 0.0  # the clock `due_at` is compared with
    claimed: list[int] = field(default_factory=list)

    def row(self, email_id: int) -> Row:
        return next(r for r in self.rows if r.id == email_id)

    def _queued(self, email: QueuedEmail) -> Row | None:
        """The row the unique keys find: (event, kind), and one cancellation e-mail per booking."""
        def same(queued: QueuedEmail) -> bool:
            return ((queued.event_id, queued.kind) == (email.event_id, email.kind)
                    or (email.kind == queued.kind == "cancellation" and queued.booking_id == email.booking_id))
        return next((r for r in self.rows if r.email and same(r.email)), None)

    async def enqueue(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        if self._queued(email) is not None:
            return False
        self.rows.append(Row(len(self.rows) + 1, rendered.recipient, rendered, email=email))
        return True

    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        if self._queued(failed.email) is not None:
            return False
        self.rows.append(Row(len(self.rows) + 1, failed.recipient, status="FAILED", reason=failed.reason,
                             error=failed.error, email=failed.email))
        return True

    async def claim_due(self) -> DueEmail | None:
        due = [r for r in self.rows if r.status == "PENDING" and r.due_at <= self.now]
        if not due:
            return None
        row = min(due, key=lambda r: (r.due_at, r.id))
        self.claimed.append(row.id)
        rendered = row.rendered or RenderedEmail(row.recipient, f"To: {row.recipient}\r\n\r\nhi\r\n".encode())
        return DueEmail(row.id, f"<{row.id}@test>", row.attempts, row.age, rendered)

    async def mark_sent(self, email_id: int) -> None:
        row = self.row(email_id)
        row.status, row.attempts = "SENT", row.attempts + 1

    async def defer(self, email_id: int, error: str, delay_seconds: float) -> None:
        row = self.row(email_id)
        row.attempts, row.error, row.due_at = row.attempts + 1, error, self.now + delay_seconds

    async def mark_failed(self, email_id: int, reason: str, error: str) -> None:
        row = self.row(email_id)
        row.status, row.attempts, row.reason, row.error = "FAILED", row.attempts + 1, reason, error
