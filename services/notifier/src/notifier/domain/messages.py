"""E-mail rendering: one pure function per e-mail kind, producing RFC 5322 bytes.

The Message-ID is derived from (event id, kind), so any re-send of the same e-mail carries the same
Message-ID and the receiving side (our SMTP sink, and mail clients) can collapse duplicates.

Which bytes go to which server: an all-ASCII address gets one 7-bit message that any server takes. A
non-ASCII address gets the message with UTF-8 headers (email's SMTPUTF8 policy) for a server that offers
SMTPUTF8 and, when the address has an ASCII spelling (IDNA domain), a second 7-bit one for a server that
does not; `RenderedEmail.for_server` picks. Bodies are always 7-bit (quoted-printable where needed), so
neither form relies on 8BITMIME for the text.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8, EmailPolicy
from email.utils import format_datetime

import qrcode

from notifier.domain.addresses import parse_address
from notifier.domain.delivery import DeliveryError, Failure

MESSAGE_ID_DOMAIN = "notifier.ticketing"
TICKET, REFUND, BOOKING_FAILED = "ticket", "refund", "booking_failed"
ASCII_POLICY = SMTP.clone(cte_type="7bit")
UTF8_POLICY = SMTPUTF8.clone(cte_type="7bit")


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


@dataclass(frozen=True)
class RenderedEmail:
    recipient: str  # envelope recipient; not ASCII -> `message` has UTF-8 headers and needs SMTPUTF8
    message: bytes
    ascii_recipient: str | None = None  # the same mailbox spelled in ASCII, for a server without SMTPUTF8
    ascii_message: bytes | None = None

    @property
    def needs_smtputf8(self) -> bool:
        return not self.recipient.isascii()

    def for_server(self, offers_smtputf8: bool) -> tuple[str, bytes, bool]:
        """(recipient, message, send with SMTPUTF8) for a server that does or does not offer it."""
        if not self.needs_smtputf8:
            return self.recipient, self.message, False
        if offers_smtputf8:
            return self.recipient, self.message, True
        if self.ascii_recipient is not None and self.ascii_message is not None:
            return self.ascii_recipient, self.ascii_message, False
        raise DeliveryError(Failure.SMTPUTF8_UNSUPPORTED,
                            f"{self.recipient} has no ASCII spelling and the server does not offer SMTPUTF8")


@dataclass(frozen=True)
class Attachment:
    data: bytes
    maintype: str
    subtype: str
    filename: str


def message_id(event_id: str, kind: str) -> str:
    return f"<{event_id}.{kind}@{MESSAGE_ID_DOMAIN}>"


def qr_png(text: str) -> bytes:
    image = qrcode.make(text, error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=8, border=4)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def render(env: Envelope, subject: str, body: str, attachment: Attachment | None = None) -> RenderedEmail:
    """Raises InvalidAddress (not an address) or ValueError (e.g. a line break in the name)."""
    address = parse_address(env.contact.email)
    if not address.needs_smtputf8:
        return RenderedEmail(address.unicode, _bytes(env, address.unicode, subject, body, attachment, ASCII_POLICY))
    utf8 = _bytes(env, address.unicode, subject, body, attachment, UTF8_POLICY)
    if address.ascii is None:
        return RenderedEmail(address.unicode, utf8)
    return RenderedEmail(address.unicode, utf8, address.ascii,
                         _bytes(env, address.ascii, subject, body, attachment, ASCII_POLICY))


def _bytes(env: Envelope, addr_spec: str, subject: str, body: str, attachment: Attachment | None,
           policy: EmailPolicy[EmailMessage]) -> bytes:
    msg = EmailMessage(policy=policy)
    msg["From"] = env.sender
    username, domain = addr_spec.rsplit("@", 1)
    # username/domain rather than addr_spec: Address refuses a non-ASCII local part given as addr_spec.
    msg["To"] = Address(env.contact.name, username, domain)
    msg["Subject"] = subject
    msg["Message-ID"] = message_id(env.event_id, env.kind)
    msg["Date"] = format_datetime(env.occurred_at)
    msg["X-Booking-Id"] = env.booking_id
    msg["X-Event-Id"] = env.event_id
    msg.set_content(body)
    if attachment is not None:
        msg.add_attachment(attachment.data, maintype=attachment.maintype, subtype=attachment.subtype,
                           filename=attachment.filename)
    return msg.as_bytes()


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
    return render(env, f"Your tickets - booking {env.booking_id}", body, qr)


def render_refund(env: Envelope, amount_cents: int, refund_id: str) -> RenderedEmail:
    body = (f"Hello {env.contact.name},\n\nwe refunded {_euros(amount_cents)} for booking {env.booking_id}.\n"
            f"Refund reference: {refund_id}\nIt may take a few days to show on your statement.\n")
    return render(env, f"Refund issued - booking {env.booking_id}", body)


def render_booking_failed(env: Envelope, reason: str) -> RenderedEmail:
    body = (f"Hello {env.contact.name},\n\nyour payment for booking {env.booking_id} arrived after the seats "
            f"were no longer available ({reason}).\nYou were refunded automatically; "
            f"a refund confirmation follows.\n")
    return render(env, f"Booking not completed, you were refunded - booking {env.booking_id}", body)
