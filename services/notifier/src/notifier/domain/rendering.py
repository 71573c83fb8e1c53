"""RFC 5322 bytes for one recipient, in the forms the SMTP servers we meet can take.

An all-ASCII address gets one 7-bit message that any server takes. A non-ASCII address gets the message
with UTF-8 headers (email's SMTPUTF8 policy) for a server that offers SMTPUTF8 and, when the address has an
ASCII spelling (IDNA domain), a second 7-bit one for a server that does not; `RenderedEmail.for_server`
picks. Bodies are always 7-bit (quoted-printable where needed), so neither form relies on 8BITMIME for text.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8, EmailPolicy

from notifier.domain.addresses import parse_address
from notifier.domain.delivery import DeliveryError, Failure

ASCII_POLICY = SMTP.clone(cte_type="7bit")
UTF8_POLICY = SMTPUTF8.clone(cte_type="7bit")


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


@dataclass(frozen=True)
class Draft:
    """One e-mail before it is addressed: headers other than To, the text, an optional attachment."""

    headers: tuple[tuple[str, str], ...]
    body: str
    attachment: Attachment | None = None


def render(name: str, email: str, draft: Draft) -> RenderedEmail:
    """Raises InvalidAddress (not an address) or ValueError (e.g. a line break in the name)."""
    address = parse_address(email)
    if not address.needs_smtputf8:
        return RenderedEmail(address.unicode, _bytes(name, address.unicode, draft, ASCII_POLICY))
    utf8 = _bytes(name, address.unicode, draft, UTF8_POLICY)
    if address.ascii is None:
        return RenderedEmail(address.unicode, utf8)
    return RenderedEmail(address.unicode, utf8, address.ascii, _bytes(name, address.ascii, draft, ASCII_POLICY))


def _bytes(name: str, addr_spec: str, draft: Draft, policy: EmailPolicy[EmailMessage]) -> bytes:
    msg = EmailMessage(policy=policy)
    username, domain = addr_spec.rsplit("@", 1)
    # username/domain rather than addr_spec: Address refuses a non-ASCII local part given as addr_spec.
    msg["To"] = Address(name, username, domain)
    for header, value in draft.headers:
        msg[header] = value
    msg.set_content(draft.body)
    if draft.attachment is not None:
        a = draft.attachment
        msg.add_attachment(a.data, maintype=a.maintype, subtype=a.subtype, filename=a.filename)
    return msg.as_bytes()
