"""Our e-mails: one pure function per e-mail kind, producing a `RenderedEmail` (rendering.py), in the
customer's language (the texts are gettext msgids: English, translated by the catalogues in notifier/locale).

The Message-ID is derived from (event id, kind), so any re-send of the same e-mail carries the same
Message-ID and the receiving side (our SMTP sink, and mail clients) can collapse duplicates.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime

import qrcode

from notifier.domain.language import ENGLISH, Language
from notifier.domain.rendering import Attachment, Draft, RenderedEmail, render
from notifier.domain.showing import Showing

MESSAGE_ID_DOMAIN = "notifier.ticketing"
TICKET, REFUND, BOOKING_FAILED, CANCELLATION = "ticket", "refund", "booking_failed", "cancellation"


@dataclass(frozen=True)
class Contact:
    customer_id: int
    email: str
    name: str
    locale: str = "en"


@dataclass(frozen=True)
class Envelope:
    """What every e-mail about a booking event needs."""

    event_id: str
    kind: str
    booking_id: str
    showtime_id: int
    occurred_at: datetime
    contact: Contact
    sender: str
    language: Language = ENGLISH
    currency: str = "EUR"  # ISO 4217: the amounts are cents of it


def message_id(event_id: str, kind: str) -> str:
    return f"<{event_id}.{kind}@{MESSAGE_ID_DOMAIN}>"


def qr_png(text: str) -> bytes:
    image = qrcode.make(text, error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=8, border=4)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _render(env: Envelope, subject: str, body: str, attachment: Attachment | None = None) -> RenderedEmail:
    headers = (("From", env.sender), ("Subject", subject), ("Message-ID", message_id(env.event_id, env.kind)),
               ("Date", format_datetime(env.occurred_at)), ("X-Booking-Id", env.booking_id),
               ("X-Event-Id", env.event_id))
    return render(env.contact.name, env.contact.email, Draft(headers, body, attachment))


def render_ticket(env: Envelope, showing: Showing, paid_cents: int, discount_cents: int, points: int,
                  signed_ticket: str) -> RenderedEmail:
    lang, _ = env.language, env.language.gettext
    discount = (_("Voucher discount: {amount}").format(amount=lang.money(discount_cents, env.currency)) + "\n"
                if discount_cents > 0 else "")
    body = (_hello(env) + _("your booking {booking} is confirmed.").format(booking=env.booking_id) + "\n\n"
            + showing.describe(lang, env.currency)
            + _("Paid: {amount}").format(amount=lang.money(paid_cents, env.currency)) + "\n" + discount
            + _("Loyalty points earned: {points}").format(points=points) + "\n\n"
            + _("Show the attached QR code at the entrance: it admits your whole group.") + "\n"
            + _("Ticket code (if the QR code cannot be scanned):") + "\n" + signed_ticket + "\n")
    subject = (_("Your tickets: {title} - booking {booking}").format(title=showing.title, booking=env.booking_id)
               if showing.title else _("Your tickets - booking {booking}").format(booking=env.booking_id))
    qr = Attachment(qr_png(signed_ticket), "image", "png", f"ticket-{env.booking_id}.png")
    return _render(env, subject, body, qr)


def render_cancellation(env: Envelope, showing: Showing, reason: str, refund_cents: int | None) -> RenderedEmail:
    """A cancelled booking: asked by its customer (CUSTOMER) or with its showtime (SHOWTIME_CANCELLED), which
    read differently; with the refund, the full amount paid (None: the amount is not known here)."""
    lang, _ = env.language, env.language.gettext
    if reason == "SHOWTIME_CANCELLED":
        subject = _("Showtime cancelled - booking {booking}")
        opening = _("we are sorry: this showtime has been cancelled, and your booking {booking} with it.")
        closing = _("You need to do nothing. Your ticket is no longer valid.")
    else:
        subject = _("Booking cancelled - booking {booking}")
        opening = _("as you asked, your booking {booking} is cancelled and its seats are on sale again.")
        closing = _("Your ticket is no longer valid.")
    refund = (_("We are refunding {amount}, the full amount you paid, to the card you paid with.").format(
                  amount=lang.money(refund_cents, env.currency)) if refund_cents is not None
              else _("We are refunding the full amount you paid to the card you paid with."))
    body = (_hello(env) + opening.format(booking=env.booking_id) + "\n\n" + showing.describe(lang, env.currency)
            + "\n" + refund + " " + _("It may take a few days to show on your statement.") + "\n" + closing + "\n")
    return _render(env, subject.format(booking=env.booking_id), body)


def render_refund(env: Envelope, amount_cents: int, refund_id: str) -> RenderedEmail:
    lang, _ = env.language, env.language.gettext
    body = (_hello(env) + _("we refunded {amount} for booking {booking}.").format(
                amount=lang.money(amount_cents, env.currency), booking=env.booking_id) + "\n"
            + _("Refund reference: {refund}").format(refund=refund_id) + "\n"
            + _("It may take a few days to show on your statement.") + "\n")
    return _render(env, _("Refund issued - booking {booking}").format(booking=env.booking_id), body)


def render_booking_failed(env: Envelope, reason: str) -> RenderedEmail:
    _ = env.language.gettext
    why = {"HOLD_EXPIRED": _("the seats' hold had expired"),
           "HOLD_RELEASED": _("the seats had been released")}.get(reason, reason)
    body = (_hello(env) + _("your payment for booking {booking} arrived after the seats were no longer available "
                            "({why}).").format(booking=env.booking_id, why=why) + "\n"
            + _("You were refunded automatically; a refund confirmation follows.") + "\n")
    return _render(env, _("Booking not completed, you were refunded - booking {booking}").format(
        booking=env.booking_id), body)


def _hello(env: Envelope) -> str:
    _ = env.language.gettext
    greeting = _("Hello {name},").format(name=env.contact.name) if env.contact.name else _("Hello,")
    return greeting + "\n\n"
