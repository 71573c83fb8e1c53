"""What the handlers need from the outside world: abstract ports, and `Deps`, built in bootstrap.py.

Adapters (adapters/) implement these with Postgres and SMTP; unit tests subclass them with in-memory fakes.
"""

from __future__ import annotations

import abc
import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ticketing.unit_of_work import UnitOfWork

from notifier.config import NotifierSettings
from notifier.domain.messages import Contact
from notifier.domain.policy import NotifyPolicy
from notifier.domain.rendering import RenderedEmail


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


@dataclass(frozen=True)
class DueEmail:
    id: int
    message_id: str
    attempts: int  # before the one about to be made
    age_seconds: float  # since queued (or re-queued by an operator)
    rendered: RenderedEmail


@dataclass(frozen=True)
class FailedEmail:
    id: int
    kind: str
    customer_id: int
    recipient: str
    failure_reason: str
    event_json: str | None  # None: queued before events were kept with the e-mail
    rendered: bool


@dataclass(frozen=True)
class BookingRecord:
    """What the notifier knows of a booking when it is cancelled."""

    confirmed: dict[str, Any] | None  # its BookingConfirmed's data, if it came
    refund_cents: int | None  # RefundIssued's amount, if it came
    cancelled_by: uuid.UUID | None = None  # the BookingCancelled whose e-mail tells of the cancellation


class BookingRecords(abc.ABC):
    """Per booking: its ticket details, its refund and its cancellation (one cancellation e-mail per booking)."""

    @abc.abstractmethod
    async def record_confirmed(self, booking_id: uuid.UUID, customer_id: int, data: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    async def record_refund(self, booking_id: uuid.UUID, customer_id: int, amount_cents: int) -> bool:
        """Keep the refund's amount; True when the booking's cancellation was processed before it."""

    @abc.abstractmethod
    async def record_cancelled(self, booking_id: uuid.UUID, customer_id: int,
                               event_id: uuid.UUID) -> BookingRecord | None:
        """The first cancellation of the booking: what is known of it; None for any later one."""

    @abc.abstractmethod
    async def get(self, booking_id: uuid.UUID) -> BookingRecord | None: ...


class CustomerDirectory(abc.ABC):
    """Where ticket e-mails go, filled by operators."""

    @abc.abstractmethod
    async def get(self, customer_id: int) -> Contact | None: ...

    @abc.abstractmethod
    async def upsert(self, contact: Contact) -> None: ...

    @abc.abstractmethod
    async def all(self) -> list[Contact]: ...

    @abc.abstractmethod
    async def record_without_address(self, event_id: uuid.UUID, booking_id: uuid.UUID, customer_id: int,
                                     event_type: str) -> bool:
        """Keep a booking event no address was found for; True the first time for that event."""

    @abc.abstractmethod
    async def without_address(self, limit: int) -> list[WithoutAddress]:
        """The booking events sent to nobody, newest first."""


@dataclass(frozen=True)
class WithoutAddress:
    """A booking event no e-mail went out for: no address anywhere when it came."""

    event_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    event_type: str
    recorded_at: Any
    directory_email: str | None  # the directory's address now, if an operator has added one since


class BuyerContacts(abc.ABC):
    """The buyer's contact as his identity provider stated it (hold-service keeps it, docs/sign-in.md)."""

    @abc.abstractmethod
    async def of_booking(self, booking_id: uuid.UUID, customer_id: int) -> Contact | None:
        """The booking's buyer's verified address, or None; raises ConnectionError when hold-service cannot be
        asked (the event is tried again)."""


class PointsLedger(abc.ABC):
    @abc.abstractmethod
    async def credit(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID, amount_cents: int,
                     points: int) -> bool:
        """True if credited now, False if this booking was already credited."""


class EmailQueue(abc.ABC):
    """The e-mails to send: queued by the handlers, worked through by the sender, one transaction each."""

    @abc.abstractmethod
    async def enqueue(self, email: QueuedEmail, rendered: RenderedEmail) -> bool:
        """True if queued now, False if this (event, kind) was already queued."""

    @abc.abstractmethod
    async def record_unrenderable(self, failed: UnrenderableEmail) -> bool:
        """Keep the e-mail as FAILED with the reason; True if recorded now, False if already there."""

    @abc.abstractmethod
    async def claim_due(self) -> DueEmail | None:
        """The oldest pending e-mail whose next attempt is due, locked until the transaction ends (`FOR
        UPDATE SKIP LOCKED`: two senders never send the same e-mail at once)."""

    @abc.abstractmethod
    async def mark_sent(self, email_id: int) -> None: ...

    @abc.abstractmethod
    async def defer(self, email_id: int, error: str, delay_seconds: float) -> None:
        """Count the failed attempt; the e-mail is due again after `delay_seconds`."""

    @abc.abstractmethod
    async def mark_failed(self, email_id: int, reason: str, error: str) -> None:
        """Count the attempt and give up: FAILED with the reason, skipped by later passes."""


class EmailAdmin(abc.ABC):
    """The operator's side of the queue (`python -m notifier.entrypoints.cli.emails`)."""

    @abc.abstractmethod
    async def lock_failed(self, email_id: int) -> FailedEmail | None:
        """The e-mail if it is FAILED, locked until the transaction ends."""

    @abc.abstractmethod
    async def status(self, email_id: int) -> str | None: ...

    @abc.abstractmethod
    async def requeue_rendered(self, email_id: int, rendered: RenderedEmail) -> None: ...

    @abc.abstractmethod
    async def requeue_as_is(self, email_id: int) -> bool: ...

    @abc.abstractmethod
    async def failed_ids(self, reason: str | None = None) -> list[int]: ...

    @abc.abstractmethod
    async def listing(self, status: str | None, limit: int) -> list[dict[str, object]]: ...


class NotifierUnitOfWork(UnitOfWork):
    customers: CustomerDirectory
    contacts: BuyerContacts | None = None  # set by the consumer from Deps (None: the directory only)
    bookings: BookingRecords
    points: PointsLedger
    emails: EmailQueue
    email_admin: EmailAdmin


class Mailer(abc.ABC):
    @abc.abstractmethod
    async def send(self, email: RenderedEmail) -> None:
        """Hand one message to the mail server; raises DeliveryError if it was not accepted."""


@dataclass
class Deps:
    """Everything a handler may use; one per process, built by bootstrap.py."""

    settings: NotifierSettings
    uow: Callable[[], NotifierUnitOfWork]
    policy: NotifyPolicy
    mailer: Mailer
    contacts: BuyerContacts | None = None  # hold-service's buyer contacts (CONTACTS_URL), else the directory only
    # Set by the consumer after an event committed: the sender starts a pass at once instead of at its next
    # poll. Shared by the consumer agent and the sender task of one process.
    wake_sender: asyncio.Event = field(default_factory=asyncio.Event)
