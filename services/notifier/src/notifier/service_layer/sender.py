"""The e-mail sender: delivers queued e-mails over SMTP, one transaction per e-mail.

Guarantee: at-least-once SMTP delivery, exactly-once as the customer sees it. The row stays locked
(`FOR UPDATE SKIP LOCKED`) while it is sent, so two senders never send the same row at once. A crash
after the SMTP server accepted the message and before `mark_sent` commits leaves the row PENDING, and the
next pass sends it again, at most once per crash, with the SAME Message-ID (derived from the event id),
which the SMTP sink (and mail clients) collapse into one e-mail. Because each e-mail commits on its own,
a crash can re-send at most the one in flight, not a whole batch.

No e-mail blocks another: each attempt is counted on its row; a permanent refusal marks it FAILED and
the pass goes on; a transient one gives it a next-attempt time (exponential backoff, capped) so the
next due e-mail comes first; after the bounds it is FAILED too (domain/delivery.py). Only a server
that is unavailable (refused, reset, timed out, 421) ends the pass early: the other e-mails would meet
the same server, and `SenderLoop` then leaves it alone for a growing pause instead of hammering it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ticketing.logs import log_action

from notifier.domain.delivery import DeliveryError, Failure, GiveUp, RetryPolicy
from notifier.service_layer.metrics import EMAILS_DEFERRED, EMAILS_FAILED, EMAILS_SENT
from notifier.service_layer.ports import Deps, DueEmail, EmailQueue, Mailer, NotifierUnitOfWork

logger = logging.getLogger(__name__)
UnitsOfWork = Callable[[], NotifierUnitOfWork]


class Outcome(enum.Enum):
    SENT = "sent"
    IDLE = "idle"  # nothing due
    FAILED = "failed"
    DEFERRED = "deferred"
    SERVER_DOWN = "server_down"


@dataclass(frozen=True)
class PassResult:
    counts: dict[Outcome, int]
    server_down: bool


async def send_one(uow: UnitsOfWork, mailer: Mailer, policy: RetryPolicy) -> Outcome:
    """Send the next due e-mail and record what happened to it, in one transaction."""
    async with uow() as work:
        email = await work.emails.claim_due()
        if email is None:
            return Outcome.IDLE
        try:
            await mailer.send(email.rendered)
        except DeliveryError as exc:
            outcome = await _after_failure(work.emails, email, exc, policy)
        except Exception as exc:  # a bug must not block the queue: counted, retried, bounded like a 4xx
            outcome = await _after_failure(work.emails, email, DeliveryError(Failure.DEFERRED, repr(exc)), policy)
        else:
            await work.emails.mark_sent(email.id)
            outcome = Outcome.SENT
        await work.commit()
    if outcome is Outcome.SENT:
        EMAILS_SENT.inc()
        log_action(logger, "email.sent", message_id=email.message_id, attempts=email.attempts + 1)
    return outcome


async def _after_failure(queue: EmailQueue, email: DueEmail, exc: DeliveryError, policy: RetryPolicy) -> Outcome:
    attempts = email.attempts + 1
    verdict = policy.verdict(exc.failure, attempts, email.age_seconds)
    fields: dict[str, Any] = {"email_id": email.id, "message_id": email.message_id, "attempts": attempts,
              "failure": exc.failure.reason, "error": exc.detail}
    if isinstance(verdict, GiveUp):
        await queue.mark_failed(email.id, verdict.reason, exc.detail)
        EMAILS_FAILED.labels(verdict.reason).inc()
        log_action(logger, "email.failed",
                   "e-mail given up; `python -m notifier.entrypoints.cli.emails retry` re-queues it",
                   level=logging.ERROR, reason=verdict.reason, **fields)
        outcome = Outcome.FAILED
    else:
        await queue.defer(email.id, exc.detail, verdict.delay_seconds)
        EMAILS_DEFERRED.labels(exc.failure.reason).inc()
        log_action(logger, "email.deferred", level=logging.WARNING, retry_in_seconds=verdict.delay_seconds,
                   **fields)
        outcome = Outcome.DEFERRED
    return Outcome.SERVER_DOWN if exc.failure.server_down else outcome


async def send_pending(uow: UnitsOfWork, mailer: Mailer, policy: RetryPolicy, limit: int) -> PassResult:
    """Up to `limit` attempts; stops when nothing is due or the server is unavailable."""
    counts = dict.fromkeys(Outcome, 0)
    for _ in range(limit):
        outcome = await send_one(uow, mailer, policy)
        counts[outcome] += 1
        if outcome in (Outcome.IDLE, Outcome.SERVER_DOWN):
            break
    return PassResult(counts, server_down=counts[Outcome.SERVER_DOWN] > 0)


class SenderLoop:
    """Passes over the queue when woken (a new e-mail was queued) or every `interval` seconds; after a
    pass that found the server unavailable it waits `policy.pause(...)` and ignores wake-ups meanwhile."""

    def __init__(self, uow: UnitsOfWork, mailer: Mailer, policy: RetryPolicy, batch_size: int,
                 interval: float, wake: asyncio.Event) -> None:
        self.uow, self.mailer, self.policy = uow, mailer, policy
        self.batch_size, self.interval, self.wake = batch_size, interval, wake
        self.outages = 0  # consecutive passes that found the server unavailable

    async def run_pass(self) -> PassResult:
        result = await send_pending(self.uow, self.mailer, self.policy, self.batch_size)
        if result.server_down:
            self.outages += 1
            log_action(logger, "email.server_unavailable", level=logging.WARNING, outages=self.outages,
                       pause_seconds=self.pause_seconds())
        elif self.outages and result.counts[Outcome.IDLE] < sum(result.counts.values()):
            # The server answered (accepted or refused); an idle pass tells nothing about it.
            log_action(logger, "email.server_back", outages=self.outages)
            self.outages = 0
        return result

    def pause_seconds(self) -> float:
        return self.policy.pause(self.interval, self.outages) if self.outages else 0.0

    async def run(self) -> None:
        while True:
            if self.outages:
                await asyncio.sleep(self.pause_seconds())
            else:
                try:
                    await asyncio.wait_for(self.wake.wait(), self.interval)
                except TimeoutError:
                    pass
            self.wake.clear()
            try:
                await self.run_pass()
            except Exception as exc:  # Postgres down: keep looping, rows stay pending
                log_action(logger, "email.sender_failed", str(exc), level=logging.WARNING,
                           error=type(exc).__name__)


async def deliver_emails(deps: Deps) -> None:
    """The sender of this process, until cancelled."""
    s = deps.settings
    policy = RetryPolicy(base_seconds=s.email_retry_base_seconds, max_delay_seconds=s.email_retry_max_delay_seconds,
                         max_attempts=s.email_max_attempts, max_age_seconds=s.email_max_age_seconds,
                         max_pause_seconds=s.email_max_pause_seconds)
    await SenderLoop(deps.uow, deps.mailer, policy, s.sender_batch_size, s.sender_interval_seconds,
                     deps.wake_sender).run()
