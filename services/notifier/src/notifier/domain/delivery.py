"""What to do after an SMTP attempt failed: give up now (FAILED) or try again later, and when.

Pure decisions, tested on their own; the SMTP adapter says what kind of failure it was, the sender
applies the verdict to the e-mail's row.

Permanent (FAILED at once): a 5xx reply (RFC 5321 4.2.1: "do not repeat the exact request"), e.g. 550
mailbox unavailable or 553 bad address for the recipient, 552/554 for a message the server will never
take; and an address that needs SMTPUTF8 sent to a server that does not offer it.
Transient (retried with exponential backoff, capped): 4xx replies, connection refused or reset,
timeouts. Bounds: `max_attempts` attempts or `max_age_seconds` since the e-mail was queued, whichever
comes first, then FAILED so that an operator sees it (log `email.failed`, metric, the row) and can
re-queue it with `python -m notifier.entrypoints.cli.emails retry`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Failure(enum.Enum):
    """(reason label, permanent, says the server is unavailable rather than this message refused)."""

    REJECTED = ("rejected", True, False)
    SMTPUTF8_UNSUPPORTED = ("smtputf8_unsupported", True, False)
    DEFERRED = ("deferred", False, False)
    UNAVAILABLE = ("unavailable", False, True)

    def __init__(self, reason: str, permanent: bool, server_down: bool) -> None:
        self.reason, self.permanent, self.server_down = reason, permanent, server_down


class DeliveryError(Exception):
    """An SMTP attempt that did not end with the server accepting the message."""

    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(detail)
        self.failure, self.detail = failure, detail


# Reasons of FAILED rows that no SMTP reply gave (metric label `reason`).
ATTEMPTS_EXHAUSTED, TOO_OLD = "attempts_exhausted", "too_old"
INVALID_ADDRESS, UNRENDERABLE = "invalid_address", "unrenderable"


@dataclass(frozen=True)
class RetryLater:
    delay_seconds: float


@dataclass(frozen=True)
class GiveUp:
    reason: str


@dataclass(frozen=True)
class RetryPolicy:
    base_seconds: float = 30.0
    max_delay_seconds: float = 1800.0
    max_attempts: int = 30
    max_age_seconds: float = 86400.0
    # While the server is unavailable the sender pauses the whole queue, doubling up to this.
    max_pause_seconds: float = 60.0

    def backoff(self, attempts: int) -> float:
        """Delay after the `attempts`-th failed attempt: base, 2 x base, 4 x base ... capped."""
        return min(self.max_delay_seconds, self.base_seconds * 2.0 ** min(max(attempts - 1, 0), 32))

    def verdict(self, failure: Failure, attempts: int, age_seconds: float) -> RetryLater | GiveUp:
        """`attempts` counts the one that just failed; `age_seconds` since the e-mail was queued."""
        if failure.permanent:
            return GiveUp(failure.reason)
        if attempts >= self.max_attempts:
            return GiveUp(ATTEMPTS_EXHAUSTED)
        if age_seconds >= self.max_age_seconds:
            return GiveUp(TOO_OLD)
        return RetryLater(self.backoff(attempts))

    def pause(self, first: float, consecutive_outages: int) -> float:
        """How long the sender leaves an unavailable server alone after that many passes in a row."""
        return min(self.max_pause_seconds, first * 2.0 ** min(max(consecutive_outages - 1, 0), 32))
