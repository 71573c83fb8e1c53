"""What the notifier does for each booking event, inside the caller's transaction.

The idempotent consumer (ticketing.consumer) is the unit of work here: it opens ONE transaction, records
the event id in `processed_event`, calls these handlers with a repository on that same connection, and
commits. So the inbox row, the points credit and the queued e-mail are one atomic fact; nothing here
talks to SMTP (the sender loop does, after commit).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ticketing.events import BookingConfirmed, BookingFailed, RefundIssued
from ticketing.logs import log_action

from notifier.adapters.repository import NotifierRepository, QueuedEmail
from notifier.domain import messages
from notifier.domain.messages import Contact, Envelope
from notifier.domain.points import points_for
from notifier.domain.tickets import TicketPayload, sign_ticket

logger = logging.getLogger(__name__)

AnyEvent = BookingConfirmed | BookingFailed | RefundIssued


@dataclass(frozen=True)
class NotifyPolicy:
    mail_from: str
    signing_key: Ed25519PrivateKey
    cents_per_point: int = 100


async def _contact(event: AnyEvent, repo: NotifierRepository) -> Contact | None:
    contact = await repo.get_customer(event.customerId)
    if contact is None:
        # Documented choice: no address, no e-mail; the event still counts as processed (no retry
        # storm, no crash). Operators see this warning and can re-send by hand.
        log_action(logger, "notify.no_contact", "no e-mail address for customer", level=logging.WARNING,
                   customer_id=event.customerId, booking_id=str(event.bookingId), event_type=event.type)
    return contact


def _envelope(event: AnyEvent, kind: str, contact: Contact, policy: NotifyPolicy) -> Envelope:
    return Envelope(event_id=str(event.eventId), kind=kind, booking_id=str(event.bookingId),
                    showtime_id=event.showtimeId, occurred_at=event.occurredAt, contact=contact,
                    sender=policy.mail_from)


async def _enqueue(repo: NotifierRepository, event: AnyEvent, env: Envelope, message: bytes) -> None:
    queued = await repo.enqueue_email(QueuedEmail(
        event_id=event.eventId, kind=env.kind, booking_id=event.bookingId, customer_id=event.customerId,
        recipient=env.contact.email, message_id=messages.message_id(env.event_id, env.kind), message=message))
    log_action(logger, "notify.queued" if queued else "notify.already_queued", kind=env.kind,
               booking_id=env.booking_id, event_id=env.event_id)


async def notify_booking_confirmed(event: BookingConfirmed, repo: NotifierRepository,
                                   policy: NotifyPolicy) -> None:
    points = points_for(event.data.amountCents, policy.cents_per_point)
    if not await repo.credit_points(event.bookingId, event.customerId, event.eventId,
                                    event.data.amountCents, points):
        # Another event id for an already-credited booking: one ticket e-mail and one credit per booking.
        log_action(logger, "notify.booking_already_credited", booking_id=str(event.bookingId),
                   event_id=str(event.eventId))
        return
    log_action(logger, "points.credited", booking_id=str(event.bookingId), customer_id=event.customerId,
               points=points)
    contact = await _contact(event, repo)
    if contact is None:
        return
    ticket = sign_ticket(TicketPayload(str(event.bookingId), event.showtimeId, tuple(event.data.seats)),
                         policy.signing_key)
    env = _envelope(event, messages.TICKET, contact, policy)
    await _enqueue(repo, event, env, messages.render_ticket(env, list(event.data.seats),
                                                            event.data.amountCents, points, ticket))


async def notify_refund_issued(event: RefundIssued, repo: NotifierRepository, policy: NotifyPolicy) -> None:
    contact = await _contact(event, repo)
    if contact is not None:
        env = _envelope(event, messages.REFUND, contact, policy)
        await _enqueue(repo, event, env, messages.render_refund(env, event.data.amountCents,
                                                                event.data.refundId))


async def notify_booking_failed(event: BookingFailed, repo: NotifierRepository, policy: NotifyPolicy) -> None:
    contact = await _contact(event, repo)
    if contact is not None:
        env = _envelope(event, messages.BOOKING_FAILED, contact, policy)
        await _enqueue(repo, event, env, messages.render_booking_failed(env, event.data.reason))
