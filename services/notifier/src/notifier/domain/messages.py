"""Our e-mails: one pure function per e-mail kind, producing a `RenderedEmail` (rendering.py).

The Message-ID is derived from (event id, kind), so any re-send of the same e-mail carries the same
Message-ID and the receiving side (our SMTP sink, and mail clients) can collapse duplicates.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime

import qrcode

from notifier.domain.rendering import Attachment, Draft, RenderedEmail, render

MESSAGE_ID_DOMAIN = "notifier.ticketing"
TICKET, REFUND, BOOKING_FAILED = "ticket", "refund", "booking_failed"


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


def _euros(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d} EUR"


def render_ticket(env: Envelope, seats: list[str], paid_cents: int, discount_cents: int, points: int,
                  signed_ticket: str) -> RenderedEmail:
    discount = f"Voucher discount: {_euros(discount_cents)}\n" if discount_cents > 0 else ""
    body = (f"Hello {env.contact.name},\n\nyour booking {env.booking_id} is confirmed.\n"
            f"Showtime: {env.showtime_id}\nSeats: {', '.join(seats)}\nPaid: {_euros(paid_cents)}\n{discount}"
            f"Loyalty points earned: {points}\n\nShow the attached QR code at the entrance.\n"
            f"Ticket code (if the QR cannot be scanned):\n{signed_ticket}\n")
    qr = Attachment(qr_png(signed_ticket), "image", "png", f"ticket-{env.booking_id}.png")
    return _render(env, f"Your tickets - booking {env.booking_id}", body, qr)


def render_refund(env: Envelope, amount_cents: int, refund_id: str) -> RenderedEmail:
    body = (f"Hello {env.contact.name},\n\nwe refunded {_euros(amount_cents)} for booking {env.booking_id}.\n"
            f"Refund reference: {refund_id}\nIt may take a few days to show on your statement.\n")
    return _render(env, f"Refund issued - booking {env.booking_id}", body)


def render_booking_failed(env: Envelope, reason: str) -> RenderedEmail:
    body = (f"Hello {env.contact.name},\n\nyour payment for booking {env.booking_id} arrived after the seats "
            f"were no longer available ({reason}).\nYou were refunded automatically; "
            f"a refund confirmation follows.\n")
    return _render(env, f"Booking not completed, you were refunded - booking {env.booking_id}", body)
