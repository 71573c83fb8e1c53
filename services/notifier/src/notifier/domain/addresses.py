"""E-mail addresses as the notifier needs them: validated, in Unicode, and in ASCII where one exists.

An internationalized address has up to two spellings (RFC 6530-6532):
- the Unicode one, `josé@exämple.com`, which only a server that offers SMTPUTF8 may be given;
- the ASCII one, with the domain in IDNA (`ana@xn--exmple-cua.com`), which any server takes, but which
  exists only when the local part is ASCII: a local part is opaque to everyone but the recipient's own
  server, so there is no ASCII spelling of `josé@...` at all.

email-validator does the syntax, normalization (NFC, lower-case domain) and IDNA work; deliverability
(DNS) is not checked here: the directory is filled offline and the SMTP server has the last word.
"""

from __future__ import annotations

from dataclasses import dataclass

from email_validator import EmailNotValidError, validate_email


class InvalidAddress(ValueError):
    """The text is not an e-mail address we can send to; the message says why."""


@dataclass(frozen=True)
class MailAddress:
    unicode: str  # normalized; the spelling for a server that offers SMTPUTF8
    ascii: str | None  # IDNA domain; None when the local part is not ASCII (needs SMTPUTF8)

    @property
    def needs_smtputf8(self) -> bool:
        return not self.unicode.isascii()


def parse_address(text: str) -> MailAddress:
    try:
        checked = validate_email(text.strip(), check_deliverability=False, allow_smtputf8=True)
    except EmailNotValidError as exc:
        raise InvalidAddress(f"{text!r} is not an e-mail address: {exc}") from None
    return MailAddress(unicode=checked.normalized, ascii=checked.ascii_email)
