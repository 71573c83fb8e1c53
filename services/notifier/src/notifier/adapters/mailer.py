"""Sending rendered messages over SMTP (aiosmtplib), and what each SMTP failure means for the message.

One connection per message keeps failure handling simple (the volume is one e-mail per booking event):
connect, EHLO, STARTTLS and AUTH when configured (a real relay: SMTP_STARTTLS, SMTP_USERNAME,
SMTP_PASSWORD), choose the message's form for what the server offers (SMTPUTF8 or not), MAIL/RCPT/DATA.
Every failure leaves as a `DeliveryError` saying whether it is permanent for this message (5xx) or
transient (4xx, connection refused or reset, timeouts), and whether the server itself is unavailable
(so the sender stops its pass instead of trying every queued e-mail against a server that is down).
A failure before MAIL (no STARTTLS offered, a certificate that does not verify, credentials refused) is
the server's or our configuration's, never the message's: unavailable, the queue waits for an operator.
"""

from __future__ import annotations

import contextlib
import ssl
from dataclasses import dataclass

import aiosmtplib

from notifier.domain.delivery import DeliveryError, Failure
from notifier.domain.rendering import RenderedEmail
from notifier.service_layer.ports import Mailer

# 421: "service not available, closing transmission channel"; 530: authentication required (at MAIL, from a
# relay we did not log in to) - the server or our configuration, not this message.
SERVER_LEVEL = (421, 530)


@dataclass(frozen=True)
class SmtpLogin:
    """How the relay wants us: STARTTLS (certificate verified against `tls` or the system's CAs), then AUTH
    when a username is given."""

    starttls: bool = False
    username: str = ""
    password: str = ""
    tls: ssl.SSLContext | None = None


class SmtpMailer(Mailer):
    def __init__(self, host: str, port: int, sender: str, timeout: float = 10.0,
                 login: SmtpLogin = SmtpLogin()) -> None:
        # `sender` is the SMTP envelope sender (a bare ASCII address), not the From header.
        self.host, self.port, self.sender, self.timeout, self.login = host, port, sender, timeout, login

    async def send(self, email: RenderedEmail) -> None:
        client = aiosmtplib.SMTP(hostname=self.host, port=self.port, timeout=self.timeout,
                                 start_tls=False, use_tls=False)
        try:
            await self._open(client)
            recipient, message, smtputf8 = email.for_server(client.supports_extension("smtputf8"))
            # RFC 6531: SMTPUTF8 on MAIL FROM, and BODY=8BITMIME for the 8-bit headers (a server that
            # offers SMTPUTF8 must offer 8BITMIME, section 3.1).
            options = ["SMTPUTF8", "BODY=8BITMIME"] if smtputf8 else []
            await client.sendmail(self.sender, [recipient], message, mail_options=options)
        except (aiosmtplib.SMTPException, OSError, ValueError) as exc:  # TimeoutError is an OSError
            raise classify(exc) from exc
        else:
            with contextlib.suppress(aiosmtplib.SMTPException, OSError):
                await client.quit()  # a courtesy: the message is accepted, nothing after 250 matters
        finally:
            client.close()

    async def _open(self, client: aiosmtplib.SMTP) -> None:
        try:
            await client.connect()
            await client.ehlo()
            if self.login.starttls:
                await client.starttls(tls_context=self.login.tls or ssl.create_default_context())
                await client.ehlo()  # what the server offers is asked again over TLS (RFC 3207, 4.2)
            if self.login.username:
                await client.login(self.login.username, self.login.password)
        except (aiosmtplib.SMTPException, OSError, ValueError) as exc:
            raise DeliveryError(Failure.UNAVAILABLE, f"{type(exc).__name__}: {exc}") from exc


def classify(exc: BaseException) -> DeliveryError:
    """What an aiosmtplib (or socket) error means for the message being sent."""
    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, (aiosmtplib.SMTPConnectResponseError, aiosmtplib.SMTPHeloError)):
        return DeliveryError(Failure.UNAVAILABLE, detail)  # the server refused to talk at all
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return _by_code(max(r.code for r in exc.recipients), detail)
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return _by_code(exc.code, detail)
    if isinstance(exc, aiosmtplib.SMTPNotSupported | ValueError):
        return DeliveryError(Failure.REJECTED, detail)  # an address or option the server cannot take
    return DeliveryError(Failure.UNAVAILABLE, detail)  # refused, reset, disconnected, timed out


def _by_code(code: int, detail: str) -> DeliveryError:
    if code in SERVER_LEVEL:
        return DeliveryError(Failure.UNAVAILABLE, detail)
    if 500 <= code < 600:
        return DeliveryError(Failure.REJECTED, detail)
    return DeliveryError(Failure.DEFERRED, detail)
