"""PaymentRepository on the in-memory schema: the named queries of sql/payments.sql (every transition
conditional, the one-live-payment-per-hold index) and the CHECKs of migrations 0002 and 0003, restated; the
contract tests (tests/integration/test_contract_repositories.py) run them and Postgres on the same cases."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from payment_service.domain.model import Payment
from payment_service.service_layer.ports import (
    PaymentRepository,
    Pending,
    Unresolved,
)
from ticketing_testing.in_memory import MemoryTransaction

from .tables import Row


class FakePaymentRepository(PaymentRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx, self.now, self.rows = tx, tx.now, tx["payments"]

    def _update(self, payment_id: uuid.UUID, when: Callable[[Row], bool], **changes: Any) -> Payment | None:
        """A conditional UPDATE ... RETURNING: the changed payment, or None when the row did not qualify."""
        row = self.rows.get(payment_id)
        if row is None or not when(row):
            return None
        row = self.rows[payment_id] = _checked(row.set(**changes))
        return row.payment

    async def add(self, p: Payment, idempotency_key: str, max_attempts: int) -> None:
        live = {"PENDING", "SUCCEEDED"}
        of_hold = [r for r in self.rows.values() if r.payment.hold_id == p.hold_id]
        if len(of_hold) >= max_attempts:
            return  # the hold's attempts are used up
        if p.payment_id in self.rows or any(r.payment.status in live for r in of_hold):
            return  # ON CONFLICT DO NOTHING (the key, or one live payment per hold)
        self.rows[p.payment_id] = Row(replace(p, status="PENDING"), idempotency_key, self.now)

    async def get(self, payment_id: uuid.UUID) -> Payment | None:
        row = self.rows.get(payment_id)
        return None if row is None else row.payment

    async def of_hold(self, hold_id: uuid.UUID) -> list[Payment]:
        return [r.payment for r in self.rows.values() if r.payment.hold_id == hold_id]

    async def lock_pending_of_hold(self, hold_id: uuid.UUID) -> Payment | None:
        return next((p for p in await self.of_hold(hold_id) if p.status == "PENDING"), None)

    async def attach_session(self, payment_id: uuid.UUID, session_id: str, url: str) -> bool | None:
        attached = self._update(payment_id, lambda r: r.payment.session_id is None, session_id=session_id,
                                redirect_url=url)
        return None if attached is None else self.rows[payment_id].cancel_requested_at is not None

    async def request_cancel(self, payment_id: uuid.UUID) -> tuple[bool, str | None]:
        row = self.rows.get(payment_id)
        if row is None or row.payment.status != "PENDING":
            return False, None
        self.rows[payment_id] = replace(row, cancel_requested_at=row.cancel_requested_at or self.now)
        return True, row.payment.session_id

    async def settle(self, payment_id: uuid.UUID, status: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "PENDING", status=status,
                            gateway_paid_at=self.now if status == "SUCCEEDED" else None)

    async def paid_after_settlement(self, payment_id: uuid.UUID) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status in ("FAILED", "EXPIRED")
                            and r.payment.refund_reason is None, gateway_paid_at=self.now,
                            refund_reason="PAID_AFTER_SETTLEMENT", refund_due_since=self.now, refund_next_at=self.now)

    async def refund_due(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "SUCCEEDED" and r.payment.refund_reason is None
                            and r.booking_confirmed_at is None, refund_reason=reason, refund_due_since=self.now,
                            refund_next_at=self.now)

    async def refund_cancelled(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "SUCCEEDED" and r.payment.refund_reason is None,
                            refund_reason=reason, refund_due_since=self.now, refund_next_at=self.now)

    async def booking_confirmed(self, payment_id: uuid.UUID) -> Payment | None:
        def bookable(r: Row) -> bool:
            p = r.payment
            return r.booking_confirmed_at is None and (
                (p.status == "SUCCEEDED" and p.refund_reason is None)
                or (p.status in ("SUCCEEDED", "REFUNDED") and p.refunded_for_cancellation))
        return self._update(payment_id, bookable, booking_confirmed_at=self.now)

    async def claim_refunds(self, limit: int, lease_seconds: float) -> list[Payment]:
        due = sorted((r for r in self.rows.values() if r.owes_refund and r.refund_next_at is not None
                      and r.refund_next_at <= self.now), key=lambda r: r.refund_next_at or self.now)[:limit]
        lease = self.now + timedelta(seconds=lease_seconds)
        return [p for r in due if (p := self._update(r.payment.payment_id, lambda _: True, refund_next_at=lease))]

    async def mark_refunded(self, payment_id: uuid.UUID, refund_id: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status in ("SUCCEEDED", "FAILED", "EXPIRED")
                            and r.payment.refund_reason is not None, status="REFUNDED", refund_id=refund_id,
                            refund_next_at=None, refund_last_error=None)

    async def refund_failed(self, payment_id: uuid.UUID, retry_in: float, error: str) -> None:
        row = self.rows.get(payment_id)
        if row is not None:
            self._update(payment_id, lambda r: r.payment.status != "REFUNDED", refund_last_error=error,
                         refund_attempts=row.payment.refund_attempts + 1,
                         refund_next_at=self.now + timedelta(seconds=retry_in))

    async def pending_to_reconcile(self, after_seconds: float, limit: int = 500) -> list[Pending]:
        since = self.now - timedelta(seconds=after_seconds)
        rows = [r for r in self.rows.values() if r.payment.status == "PENDING"
                and (r.payment.expires_at <= self.now or r.created_at < since or r.cancel_requested_at is not None)]
        return [Pending(payment=r.payment, past=r.payment.expires_at <= self.now,
                        cancel_requested=r.cancel_requested_at is not None)
                for r in sorted(rows, key=lambda r: r.created_at)[:limit]]

    async def unresolved(self, bound_seconds: float) -> Unresolved:
        bound = self.now - timedelta(seconds=bound_seconds)
        owed = [r.refund_due_since for r in self.rows.values() if r.owes_refund and r.refund_due_since]
        unbooked = [r for r in self.rows.values() if r.payment.status == "SUCCEEDED" and r.booking_confirmed_at is None
                    and r.payment.refund_reason is None and r.gateway_paid_at and r.gateway_paid_at < bound]
        return Unresolved(refunds_pending=len(owed), refunds_overdue=sum(since < bound for since in owed),
                          paid_unbooked=len(unbooked), oldest_refund_due=min(owed, default=None))

    async def purge(self, events_after: float, keys_after: float) -> tuple[str, str]:
        return (_delete_before(self.tx["callbacks"], self.now - timedelta(seconds=events_after)),
                _delete_before(self.tx["keys"], self.now - timedelta(seconds=keys_after)))


def _checked(row: Row) -> Row:
    """The CHECK constraints of migrations 0002 and 0003: a violation aborts the statement, as in Postgres."""
    p = row.payment
    if p.status == "REFUNDED" and row.gateway_paid_at is None:
        raise ValueError("refund_of_paid: only money the gateway took comes back")
    if row.booking_confirmed_at is not None and p.refund_reason is not None and not p.refunded_for_cancellation:
        raise ValueError("booked_or_refunded: a booked payment is refunded only for a cancellation")
    return row


def _delete_before(table: dict[Any, Any], cutoff: datetime) -> str:
    old = [k for k, v in table.items() if v[-1] < cutoff]  # rows are tuples ending with their time
    for k in old:
        del table[k]
    return f"DELETE {len(old)}"
