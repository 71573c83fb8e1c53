"""In-memory fakes of the notifier's ports (real subclasses, no Mock), one store shared by a unit of work's
repositories (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Self

from notifier.domain.messages import Contact
from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import (
    BookingRecord,
    BookingRecords,
    CustomerDirectory,
    DueEmail,
    EmailAdmin,
    EmailQueue,
    FailedEmail,
    NotifierUnitOfWork,
    PointsLedger,
    QueuedEmail,
    UnrenderableEmail,
    WithoutAddress,
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


class FakeDirectory(CustomerDirectory):
    def __init__(self, contacts: dict[int, Contact] | None = None) -> None:
        self.contacts = dict(contacts or {})
        self.missing: dict[uuid.UUID, tuple[uuid.UUID, int, str]] = {}

    async def get(self, customer_id: int) -> Contact | None:
        return self.contacts.get(customer_id)

    async def upsert(self, contact: Contact) -> None:
        self.contacts[contact.customer_id] = contact

    async def all(self) -> list[Contact]:
        return [self.contacts[k] for k in sorted(self.contacts)]

    async def record_without_address(self, event_id: uuid.UUID, booking_id: uuid.UUID, customer_id: int,
                                     event_type: str) -> bool:
        first = event_id not in self.missing
        self.missing[event_id] = (booking_id, customer_id, event_type)
        return first

    async def without_address(self, limit: int) -> list[WithoutAddress]:
        return [WithoutAddress(e, b, c, t, None, None) for e, (b, c, t) in list(self.missing.items())[:limit]]


class FakeBookings(BookingRecords):
    """As the named queries of sql/notifier.sql keep `booking`: the first confirmation and refund stand, the first
    cancellation is the only one answered."""

    def __init__(self) -> None:
        self.records: dict[uuid.UUID, BookingRecord] = {}

    def _record(self, booking_id: uuid.UUID) -> BookingRecord:
        return self.records.get(booking_id, BookingRecord(confirmed=None, refund_cents=None))

    async def record_confirmed(self, booking_id: uuid.UUID, customer_id: int, data: dict[str, Any]) -> None:
        record = self._record(booking_id)
        self.records[booking_id] = replace(record, confirmed=record.confirmed or data)

    async def record_refund(self, booking_id: uuid.UUID, customer_id: int, amount_cents: int) -> bool:
        record = self._record(booking_id)
        self.records[booking_id] = replace(record, refund_cents=record.refund_cents or amount_cents)
        return record.cancelled_by is not None

    async def record_cancelled(self, booking_id: uuid.UUID, customer_id: int,
                               event_id: uuid.UUID) -> BookingRecord | None:
        record = self._record(booking_id)
        if record.cancelled_by is not None:
            return None
        self.records[booking_id] = replace(record, cancelled_by=event_id)
        return self.records[booking_id]

    async def get(self, booking_id: uuid.UUID) -> BookingRecord | None:
        return self.records.get(booking_id)


class FakeLedger(PointsLedger):
    def __init__(self) -> None:
        self.points: dict[uuid.UUID, int] = {}

    async def credit(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID, amount_cents: int,
                     points: int) -> bool:
        if booking_id in self.points:
            return False
        self.points[booking_id] = points
        return True


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
        row.rendered, row.recipient, row.status, row.attempts, row.reason = (rendered, rendered.recipient,
                                                                              "PENDING", 0, None)

    async def requeue_as_is(self, email_id: int) -> bool:
        row = self.queue.row(email_id)
        if row.rendered is None:
            return False
        row.status, row.attempts, row.reason = "PENDING", 0, None
        return True

    async def failed_ids(self, reason: str | None = None) -> list[int]:
        return [r.id for r in self.queue.rows if r.status == "FAILED" and reason in (None, r.reason)]

    async def listing(self, status: str | None, limit: int) -> list[dict[str, object]]:
        rows = [r for r in reversed(self.queue.rows) if status in (None, r.status)]
        return [{"id": r.id, "status": r.status, "recipient": r.recipient} for r in rows[:limit]]


class FakeUnitOfWork(NotifierUnitOfWork):
    """Every unit of work on the same in-memory stores; `commits` counts the commits."""

    def __init__(self, contacts: dict[int, Contact] | None = None, queue: FakeQueue | None = None) -> None:
        self.customers: FakeDirectory = FakeDirectory(contacts)
        self.bookings: FakeBookings = FakeBookings()
        self.points: FakeLedger = FakeLedger()
        self.emails: FakeQueue = queue or FakeQueue()
        self.email_admin: FakeEmailAdmin = FakeEmailAdmin(self.emails)
        self.commits = 0

    async def __aenter__(self) -> Self:
        self.committed = False
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    async def commit(self) -> None:
        self.committed = True
        self.commits += 1
