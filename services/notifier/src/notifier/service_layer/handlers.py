"""What the notifier does for each booking event, inside the idempotent consumer's transaction.

The handlers get a unit of work joined to that transaction: the inbox row, the points credit and the
queued e-mail are one atomic fact; nothing here talks to SMTP (the sender does, after commit).

The address: the operators' directory first (an override, or an import), else the buyer's contact that his
identity provider stated (hold-service's GET /buyer-contacts/{bookingId}, docs/sign-in.md). An event with no
address anywhere is recorded (`customers missing` lists it) and counted
(ticketing_notifier_bookings_without_address_total).

Each e-mail is in the customer's language (the contact's locale; English when we have no catalogue for it),
with times in the cinema's time zone. A cancelled booking gets one cancellation e-mail that tells of its
refund (RefundIssued's amount if it came first, else the amount paid); a RefundIssued after it sends nothing
more.

The credit and the inbox row never depend on the e-mail: an e-mail that cannot be rendered (the
directory's address is not one, a line break in a name, any rendering bug) is recorded as FAILED with
the reason and the event still commits; raising here would retry the event, send it to the DLQ and
roll the credit back with it.
"""

from __future__ import annotations

import logging
from typing import Any

from ticketing.events import BookingCancelled, BookingConfirmed, BookingFailed, RefundIssued
from ticketing.logs import log_action
from ticketing.tickets import TicketPayload, sign_ticket

from notifier.domain import messages
from notifier.domain.addresses import InvalidAddress
from notifier.domain.delivery import INVALID_ADDRESS, UNRENDERABLE
from notifier.domain.messages import Contact, Envelope
from notifier.domain.points import points_for
from notifier.domain.policy import NotifyPolicy
from notifier.domain.rendering import RenderedEmail
from notifier.domain.showing import Showing
from notifier.service_layer.metrics import BOOKINGS_WITHOUT_ADDRESS, EMAILS_FAILED
from notifier.service_layer.ports import BookingRecord, NotifierUnitOfWork, QueuedEmail, UnrenderableEmail

logger = logging.getLogger(__name__)

AnyEvent = BookingConfirmed | BookingFailed | RefundIssued | BookingCancelled


def discount_cents(event: BookingConfirmed) -> int:
    # The event contract: BookingConfirmed carries discountCents; read through model_dump so this works
    # with catalogues from before the field was added (then there is no discount to show).
    return int(event.data.model_dump().get("discountCents", 0))


def compose_ticket(event: BookingConfirmed, env: Envelope, policy: NotifyPolicy) -> RenderedEmail:
    # amountCents is what the customer paid (after the voucher discount): points are earned on that.
    paid = event.data.amountCents
    ticket = sign_ticket(TicketPayload(str(event.bookingId), event.showtimeId, tuple(event.data.seats)),
                         policy.signing_key)
    showing = Showing.of(event.showtimeId, event.data.model_dump(mode="json"))
    return messages.render_ticket(env, showing, paid, discount_cents(event),
                                  points_for(paid, policy.cents_per_point), ticket)


def compose_cancellation(event: BookingCancelled, env: Envelope, booking: BookingRecord | None) -> RenderedEmail:
    """Named as its ticket named it (BookingConfirmed's details, when the notifier saw them); the refund is the
    whole amount paid: RefundIssued's if it came first, else BookingConfirmed's amountCents."""
    confirmed = (booking.confirmed if booking else None) or {}
    showing = Showing.of(event.showtimeId, {**event.data.model_dump(mode="json"), **confirmed})
    refund = booking.refund_cents if booking and booking.refund_cents is not None else confirmed.get("amountCents")
    return messages.render_cancellation(env, showing, event.data.reason, refund)


def compose(event: AnyEvent, contact: Contact, policy: NotifyPolicy,
            booking: BookingRecord | None = None) -> RenderedEmail:
    """The e-mail an event sends to a contact (also used to render a FAILED e-mail again); `booking`: what is
    known of a cancelled booking."""
    env = _envelope(event, KINDS[event.type], contact, policy)
    if isinstance(event, BookingConfirmed):
        return compose_ticket(event, env, policy)
    if isinstance(event, RefundIssued):
        return messages.render_refund(env, event.data.amountCents, event.data.refundId)
    if isinstance(event, BookingCancelled):
        return compose_cancellation(event, env, booking)
    return messages.render_booking_failed(env, event.data.reason)


KINDS = {"BookingConfirmed": messages.TICKET, "RefundIssued": messages.REFUND,
         "BookingFailed": messages.BOOKING_FAILED, "BookingCancelled": messages.CANCELLATION}


def render_failure(exc: Exception) -> tuple[str, str]:
    """(reason label, error text) of an e-mail that could not be rendered."""
    return (INVALID_ADDRESS if isinstance(exc, InvalidAddress) else UNRENDERABLE), f"{type(exc).__name__}: {exc}"


async def _contact(event: AnyEvent, uow: NotifierUnitOfWork) -> Contact | None:
    contact = await uow.customers.get(event.customerId)
    if contact is None and uow.contacts is not None:
        contact = await uow.contacts.of_booking(event.bookingId, event.customerId)
    if contact is None:
        # No address, no e-mail; the event still counts as processed (no retry storm, no crash). Recorded and
        # counted: operators list these, add the address and re-send.
        if await uow.customers.record_without_address(event.eventId, event.bookingId, event.customerId,
                                                      event.type):
            BOOKINGS_WITHOUT_ADDRESS.labels(event.type).inc()
        log_action(logger, "notify.no_contact", "no e-mail address for customer", level=logging.WARNING,
                   customer_id=event.customerId, booking_id=str(event.bookingId), event_type=event.type)
    return contact


def _envelope(event: AnyEvent, kind: str, contact: Contact, policy: NotifyPolicy) -> Envelope:
    return Envelope(event_id=str(event.eventId), kind=kind, booking_id=str(event.bookingId),
                    showtime_id=event.showtimeId, occurred_at=event.occurredAt, contact=contact,
                    sender=policy.mail_from, language=policy.language(contact.locale), currency=policy.currency)


async def _enqueue(uow: NotifierUnitOfWork, event: AnyEvent, contact: Contact, policy: NotifyPolicy,
                   booking: BookingRecord | None = None) -> None:
    kind = KINDS[event.type]
    email = QueuedEmail(event_id=event.eventId, kind=kind, booking_id=event.bookingId,
                        customer_id=event.customerId, message_id=messages.message_id(str(event.eventId), kind),
                        event_json=event.model_dump_json())
    fields: dict[str, Any] = {"kind": kind, "booking_id": str(event.bookingId), "event_id": str(event.eventId)}
    try:
        rendered = compose(event, contact, policy, booking)
    except Exception as exc:  # pure code only: whatever it is, it must not take the credit back
        reason, error = render_failure(exc)
        if await uow.emails.record_unrenderable(UnrenderableEmail(email, contact.email, reason, error)):
            EMAILS_FAILED.labels(reason).inc()
            log_action(logger, "email.failed", "e-mail not rendered; fix the address, then "
                       "`python -m notifier.entrypoints.cli.emails retry`", level=logging.ERROR, reason=reason,
                       error=error, customer_id=event.customerId, **fields)
        return
    queued = await uow.emails.enqueue(email, rendered)
    log_action(logger, "notify.queued" if queued else "notify.already_queued", **fields)


async def notify_booking_confirmed(event: BookingConfirmed, uow: NotifierUnitOfWork,
                                   policy: NotifyPolicy) -> None:
    points = points_for(event.data.amountCents, policy.cents_per_point)
    if not await uow.points.credit(event.bookingId, event.customerId, event.eventId,
                                   event.data.amountCents, points):
        # Another event id for an already-credited booking: one ticket e-mail and one credit per booking.
        log_action(logger, "notify.booking_already_credited", booking_id=str(event.bookingId),
                   event_id=str(event.eventId))
        return
    log_action(logger, "points.credited", booking_id=str(event.bookingId), customer_id=event.customerId,
               points=points)
    await uow.bookings.record_confirmed(event.bookingId, event.customerId, event.data.model_dump(mode="json"))
    contact = await _contact(event, uow)
    if contact is not None:
        await _enqueue(uow, event, contact, policy)


async def notify_refund_issued(event: RefundIssued, uow: NotifierUnitOfWork, policy: NotifyPolicy) -> None:
    if await uow.bookings.record_refund(event.bookingId, event.customerId, event.data.amountCents):
        # The booking's cancellation e-mail told of this refund: one e-mail per cancellation.
        log_action(logger, "notify.refund_told_in_cancellation", booking_id=str(event.bookingId),
                   event_id=str(event.eventId))
        return
    contact = await _contact(event, uow)
    if contact is not None:
        await _enqueue(uow, event, contact, policy)


async def notify_booking_cancelled(event: BookingCancelled, uow: NotifierUnitOfWork, policy: NotifyPolicy) -> None:
    booking = await uow.bookings.record_cancelled(event.bookingId, event.customerId, event.eventId)
    if booking is None:
        # Another event id for a booking already cancelled (say its customer's cancel and its showtime's):
        # one cancellation e-mail per booking.
        log_action(logger, "notify.booking_already_cancelled", booking_id=str(event.bookingId),
                   event_id=str(event.eventId), reason=event.data.reason)
        return
    contact = await _contact(event, uow)
    if contact is not None:
        await _enqueue(uow, event, contact, policy, booking)


async def notify_booking_failed(event: BookingFailed, uow: NotifierUnitOfWork, policy: NotifyPolicy) -> None:
    contact = await _contact(event, uow)
    if contact is not None:
        await _enqueue(uow, event, contact, policy)
