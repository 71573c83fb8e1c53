"""An operator re-queues FAILED e-mails (`python -m notifier.entrypoints.cli.emails retry`).

The e-mail is rendered again from the booking event kept with it, for the address now in the directory:
the usual fix is to correct the customer's address, then retry. It becomes PENDING with its attempts and
age counted afresh; the Message-ID stays the same (derived from the event), so a customer who somehow got
the first one still sees one e-mail. Idempotent: an e-mail that is not FAILED (already re-queued, sent) is
left alone. One transaction per e-mail, the row locked meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ticketing.events import BookingCancelled, BookingConfirmed, BookingFailed, RefundIssued, decode_booking_event
from ticketing.logs import log_action

from notifier.domain.commands import RequeueEmails
from notifier.domain.policy import NotifyPolicy
from notifier.service_layer.handlers import compose, render_failure
from notifier.service_layer.ports import Deps, FailedEmail, NotifierUnitOfWork

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Requeued:
    email_id: int
    done: bool  # True: PENDING now (or nothing to do); False: could not be re-queued, `note` says why
    note: str


async def requeue_emails(cmd: RequeueEmails, deps: Deps) -> list[Requeued]:
    targets = cmd.ids
    if cmd.all_failed:
        async with deps.uow() as uow:
            targets = await uow.email_admin.failed_ids(cmd.reason)
    return [await _requeue(email_id, deps) for email_id in targets]


async def _requeue(email_id: int, deps: Deps) -> Requeued:
    async with deps.uow() as uow:
        failed = await uow.email_admin.lock_failed(email_id)
        if failed is None:
            status = await uow.email_admin.status(email_id)
            if status is None:
                return Requeued(email_id, False, "no such e-mail")
            return Requeued(email_id, True, f"status {status}, not FAILED: nothing to do")
        result = await _requeue_failed(uow, failed, deps.policy)
        await uow.commit()
    log_action(logger, "email.requeued" if result.done else "email.requeue_refused", result.note,
               email_id=email_id, previous_reason=failed.failure_reason)
    return result


async def _requeue_failed(uow: NotifierUnitOfWork, failed: FailedEmail, policy: NotifyPolicy) -> Requeued:
    contact = await uow.customers.get(failed.customer_id)
    event = _event(failed.event_json)
    if event is None or contact is None:
        if await uow.email_admin.requeue_as_is(failed.id):
            return Requeued(failed.id, True, f"re-queued as it was, to {failed.recipient}")
        why = "no directory entry" if contact is None else "no event to render it from"
        return Requeued(failed.id, False, f"customer {failed.customer_id}: {why}")
    booking = await uow.bookings.get(event.bookingId) if isinstance(event, BookingCancelled) else None
    try:
        rendered = compose(event, contact, policy, booking)
    except Exception as exc:  # same rule as the handler: a rendering error is reported, never raised
        return Requeued(failed.id, False, f"still cannot be rendered: {render_failure(exc)[1]}")
    await uow.email_admin.requeue_rendered(failed.id, rendered)
    return Requeued(failed.id, True, f"re-queued to {rendered.recipient}")


def _event(event_json: str | None) -> BookingConfirmed | RefundIssued | BookingFailed | BookingCancelled | None:
    """The stored event, or None: not kept (queued before 0002) or no longer valid under the catalogue."""
    if event_json is None:
        return None
    try:
        event = decode_booking_event(event_json.encode())
    except ValueError:
        return None
    return event if isinstance(event, BookingConfirmed | RefundIssued | BookingFailed | BookingCancelled) else None


async def email_listing(status: str | None, limit: int, deps: Deps) -> list[dict[str, object]]:
    async with deps.uow() as uow:
        return await uow.email_admin.listing(status, limit)
