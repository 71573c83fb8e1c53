"""The rows of the in-memory schema under the fakes (the tables of the payment migrations as plain data)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from payment_service.domain.model import Payment
from ticketing_testing.in_memory import Clock, MemoryDb

TABLES = ("payments", "keys", "callbacks", "outbox")


@dataclass(frozen=True)
class Row:
    """A payment row: the domain's Payment and the columns only the queries read."""

    payment: Payment
    idempotency_key: str
    created_at: datetime
    cancel_requested_at: datetime | None = None
    gateway_paid_at: datetime | None = None
    booking_confirmed_at: datetime | None = None
    refund_due_since: datetime | None = None
    refund_next_at: datetime | None = None
    refund_last_error: str | None = None

    def set(self, **changes: Any) -> Row:
        payment = {k: changes.pop(k) for k in list(changes) if k in Payment.__dataclass_fields__}
        return replace(self, payment=replace(self.payment, **payment), **changes)

    @property
    def owes_refund(self) -> bool:
        return self.payment.refund_reason is not None and self.payment.status != "REFUNDED"


def payments_db(clock: Clock | None = None) -> MemoryDb:
    return MemoryDb(*TABLES, clock=clock)
