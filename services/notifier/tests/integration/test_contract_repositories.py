"""The contracts of the notifier's repositories where sql/notifier.sql and the queue's unique keys decide (the
first confirmation and refund of a booking stand, one cancellation, one credit and one e-mail of a kind per
event, one cancellation e-mail per booking, an operator's re-queue of FAILED e-mails only), run against the
fakes (tests/fakes/) and the real adapters on Postgres: a rule changed in the SQL and not in the fakes fails
here. Each case runs in one unit of work that it never commits (the fakes keep no transaction to roll back;
Postgres keeps nothing of it: no e-mail of these cases is left for a sender to claim)."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator, Callable
from types import ModuleType

import pytest
import pytest_asyncio
from notifier.adapters.repository import PgNotifierUnitOfWork
from notifier.domain.messages import Contact
from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import NotifierUnitOfWork, QueuedEmail, UnrenderableEmail
from ticketing.db import create_pool

pytestmark = pytest.mark.integration


@pytest_asyncio.fixture(params=["fake", "real"])
async def uow(request: pytest.FixtureRequest, fakes: ModuleType,
              notifier_dsn: str) -> AsyncIterator[Callable[[], NotifierUnitOfWork]]:
    if request.param == "fake":
        shared = fakes.FakeUnitOfWork()
        yield lambda: shared
        return
    pool = await create_pool(notifier_dsn, min_size=1, max_size=2)
    try:
        yield lambda: PgNotifierUnitOfWork(pool)
    finally:
        await pool.close()


def customer() -> int:
    return random.randint(10**9, 2**52)


def queued(kind: str, event_id: uuid.UUID | None = None, booking_id: uuid.UUID | None = None) -> QueuedEmail:
    return QueuedEmail(event_id or uuid.uuid4(), kind, booking_id or uuid.uuid4(), customer(),
                       f"<{uuid.uuid4()}@contract>", "{}")


RENDERED = RenderedEmail("someone@example.com", b"To: someone@example.com\r\n\r\nhi\r\n")


async def test_the_first_confirmation_and_refund_of_a_booking_stand(uow) -> None:
    booking, who = uuid.uuid4(), customer()
    async with uow() as u:
        assert await u.bookings.get(booking) is None
        await u.bookings.record_confirmed(booking, who, {"seats": ["A1"]})
        await u.bookings.record_confirmed(booking, who, {"seats": ["B9"]})
        assert await u.bookings.record_refund(booking, who, 1200) is False  # not cancelled yet
        assert await u.bookings.record_refund(booking, who, 99) is False
        record = await u.bookings.get(booking)
    assert (record.confirmed, record.refund_cents, record.cancelled_by) == ({"seats": ["A1"]}, 1200, None)


async def test_a_booking_is_cancelled_once_and_a_later_refund_knows_it(uow) -> None:
    booking, who, first = uuid.uuid4(), customer(), uuid.uuid4()
    async with uow() as u:
        assert await u.bookings.record_refund(booking, who, 800) is False
        cancelled = await u.bookings.record_cancelled(booking, who, first)
        assert await u.bookings.record_cancelled(booking, who, uuid.uuid4()) is None
        assert await u.bookings.record_refund(booking, who, 500) is True
        assert (await u.bookings.get(booking)).cancelled_by == first
        fresh = await u.bookings.record_cancelled(uuid.uuid4(), who, first)
    assert (cancelled.confirmed, cancelled.refund_cents, cancelled.cancelled_by) == (None, 800, first)
    assert (fresh.confirmed, fresh.refund_cents, fresh.cancelled_by) == (None, None, first)


async def test_a_booking_earns_points_once(uow) -> None:
    booking, who = uuid.uuid4(), customer()
    async with uow() as u:
        assert await u.points.credit(booking, who, uuid.uuid4(), 2400, 24) is True
        assert await u.points.credit(booking, who, uuid.uuid4(), 2400, 24) is False
        assert await u.points.credit(uuid.uuid4(), who, uuid.uuid4(), 2400, 24) is True


async def test_an_event_without_an_address_is_recorded_once(uow) -> None:
    event, booking, who = uuid.uuid4(), uuid.uuid4(), customer()
    async with uow() as u:
        assert await u.customers.record_without_address(event, booking, who, "BookingConfirmed") is True
        assert await u.customers.record_without_address(event, booking, who, "BookingConfirmed") is False
        await u.customers.upsert(Contact(who, "a@example.com", "A", "en"))
        await u.customers.upsert(Contact(who, "b@example.com", "B", "de"))
        assert await u.customers.get(who) == Contact(who, "b@example.com", "B", "de")
        assert await u.customers.get(customer()) is None


async def test_an_event_is_queued_once_per_kind(uow) -> None:
    ticket = queued("ticket")
    async with uow() as u:
        assert await u.emails.enqueue(ticket, RENDERED) is True
        assert await u.emails.enqueue(queued("ticket", ticket.event_id, ticket.booking_id), RENDERED) is False
        assert await u.emails.enqueue(queued("refund", ticket.event_id, ticket.booking_id), RENDERED) is True
        failed = UnrenderableEmail(queued("ticket", ticket.event_id), "bad address", "invalid_address", "no @")
        assert await u.emails.record_unrenderable(failed) is False
        other = UnrenderableEmail(queued("ticket"), "bad address", "invalid_address", "no @")
        assert await u.emails.record_unrenderable(other) is True
        assert await u.emails.record_unrenderable(other) is False


async def test_a_booking_gets_one_cancellation_e_mail_whatever_the_event(uow) -> None:
    booking = uuid.uuid4()
    async with uow() as u:
        assert await u.emails.enqueue(queued("cancellation", booking_id=booking), RENDERED) is True
        assert await u.emails.enqueue(queued("cancellation", booking_id=booking), RENDERED) is False
        failed = UnrenderableEmail(queued("cancellation", booking_id=booking), "x", "unrenderable", "boom")
        assert await u.emails.record_unrenderable(failed) is False
        assert await u.emails.enqueue(queued("ticket", booking_id=booking), RENDERED) is True


async def test_an_operator_requeues_a_failed_e_mail_once_and_only_a_failed_one(uow) -> None:
    email = queued("ticket")
    async with uow() as u:
        assert await u.emails.record_unrenderable(UnrenderableEmail(email, "not an address", "invalid_address", "x"))
        mine = [f for i in await u.email_admin.failed_ids("invalid_address")
                if (f := await u.email_admin.lock_failed(i)) is not None and f.customer_id == email.customer_id]
        assert [(f.kind, f.recipient, f.failure_reason, f.rendered) for f in mine] == [
            ("ticket", "not an address", "invalid_address", False)]
        failed = mine[0].id
        assert failed not in await u.email_admin.failed_ids("unrenderable")
        assert await u.email_admin.requeue_as_is(failed) is False  # nothing rendered to send
        assert await u.email_admin.status(failed) == "FAILED"
        await u.email_admin.requeue_rendered(failed, RENDERED)
        assert await u.email_admin.status(failed) == "PENDING"
        assert await u.email_admin.lock_failed(failed) is None
        assert await u.email_admin.requeue_as_is(failed) is False  # pending already
        assert failed not in await u.email_admin.failed_ids()
        assert await u.email_admin.status(-1) is None
