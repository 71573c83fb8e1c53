"""Sending rendered messages over SMTP (aiosmtplib)."""

from __future__ import annotations

import abc

import aiosmtplib


class Mailer(abc.ABC):
    @abc.abstractmethod
    async def send(self, recipient: str, message: bytes) -> None:
        """Hand one message to the mail server; raises if it was not accepted."""


class SmtpMailer(Mailer):
    def __init__(self, host: str, port: int, sender: str, timeout: float = 10.0) -> None:
        # `sender` is the SMTP envelope sender (a bare address), not the From header.
        self.host, self.port, self.sender, self.timeout = host, port, sender, timeout

    async def send(self, recipient: str, message: bytes) -> None:
        # One connection per message keeps failure handling trivial; the volume is one e-mail per booking.
        await aiosmtplib.send(message, sender=self.sender, recipients=[recipient],
                              hostname=self.host, port=self.port, timeout=self.timeout,
                              start_tls=False, use_tls=False)
