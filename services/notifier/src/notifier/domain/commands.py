"""What operators ask the notifier to do (the booking events are the consumer's commands)."""

from __future__ import annotations

from dataclasses import dataclass

from notifier.domain.messages import Contact


@dataclass(frozen=True)
class UpsertCustomers:
    contacts: list[Contact]  # written all or nothing


@dataclass(frozen=True)
class RequeueEmails:
    ids: list[int]
    all_failed: bool = False  # every FAILED e-mail (of `reason`, if given) instead of `ids`
    reason: str | None = None
