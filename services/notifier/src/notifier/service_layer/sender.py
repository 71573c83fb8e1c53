"""The e-mail sender: delivers queued e-mails over SMTP, one transaction per e-mail.

Guarantee: at-least-once SMTP delivery, exactly-once as the customer sees it. The row stays locked
(`FOR UPDATE SKIP LOCKED`) while it is sent, so two senders never send the same row at once. A crash
after the SMTP server accepted the message and before `mark_sent` commits leaves the row PENDING, and the
next pass sends it again, at most once per crash, with the SAME Message-ID (derived from the event id),
which the SMTP sink (and mail clients) collapse into one e-mail. Because each e-mail commits on its own,
a crash can re-send at most the one in flight, not a whole batch.
"""

from __future__ import annotations

import asyncio
import logging

import aiosmtplib
import asyncpg
from prometheus_client import Counter
from ticketing.logs import log_action

from notifier.adapters.mailer import Mailer
from notifier.adapters.repository import PgNotifierRepository

logger = logging.getLogger(__name__)

EMAILS_SENT = Counter("notifier_emails_sent_total", "E-mails accepted by the SMTP server")
EMAIL_ERRORS = Counter("notifier_email_send_errors_total", "SMTP sends that failed and stay pending")
SEND_ERRORS: tuple[type[BaseException], ...] = (aiosmtplib.SMTPException, OSError, asyncio.TimeoutError)


async def send_one(pool: asyncpg.Pool, mailer: Mailer) -> bool | None:
    """Send the oldest pending e-mail. True: sent; False: nothing pending; None: SMTP failed (retry later)."""
    async with pool.acquire() as conn, conn.transaction():
        repo = PgNotifierRepository(conn)
        claimed = await repo.claim_pending(1)
        if not claimed:
            return False
        email = claimed[0]
        try:
            await mailer.send(email.recipient, email.message)
        except SEND_ERRORS as exc:
            EMAIL_ERRORS.inc()
            await repo.record_failure(email.id, f"{type(exc).__name__}: {exc}")
            log_action(logger, "email.send_failed", str(exc), level=logging.WARNING,
                       message_id=email.message_id, error=type(exc).__name__)
            return None
        await repo.mark_sent(email.id)
    EMAILS_SENT.inc()
    log_action(logger, "email.sent", message_id=email.message_id)
    return True


async def send_pending(pool: asyncpg.Pool, mailer: Mailer, limit: int) -> int:
    """Send up to `limit` pending e-mails; stops at the first SMTP failure (the server is likely down)."""
    sent = 0
    while sent < limit:
        outcome = await send_one(pool, mailer)
        if not outcome:
            break
        sent += 1
    return sent
