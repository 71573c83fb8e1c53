"""Postgres repositories for payments, idempotency keys and callback ids (each wraps one connection)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import asyncpg
from ticketing import outbox
from ticketing.db import Queries
from ticketing.unit_of_work import Conn, PostgresUnitOfWork

from payment_service.domain.model import Payment
from payment_service.service_layer.ports import (
    CallbackEventRepository,
    IdempotencyRepository,
    PaymentRepository,
    PaymentsUnitOfWork,
    Pending,
    Unresolved,
)

QUERIES = Queries.load(Path(__file__).resolve().parents[1] / "sql" / "payments.sql")

_PAYMENT_FIELDS = ("payment_id", "hold_id", "booking_id", "customer_id", "showtime_id", "amount_cents",
                   "discount_cents", "voucher_code", "status", "expires_at", "session_id", "redirect_url",
                   "refund_id", "refund_reason", "refund_attempts", "currency")


def _payment(row: asyncpg.Record | None) -> Payment | None:
    return None if row is None else Payment(**{f: row[f] for f in _PAYMENT_FIELDS})


def _payments(rows: list[asyncpg.Record]) -> list[Payment]:
    return [p for p in map(_payment, rows) if p is not None]


class PgPaymentRepository(PaymentRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def add(self, p: Payment, idempotency_key: str, max_attempts: int) -> None:
        await self.conn.execute(QUERIES.insert_payment, p.payment_id, p.hold_id, p.booking_id, p.customer_id,
                                p.showtime_id, p.amount_cents, p.discount_cents, p.voucher_code,
                                idempotency_key, p.expires_at, max_attempts, p.currency)

    async def get(self, payment_id: uuid.UUID) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.get_payment, payment_id))

    async def of_hold(self, hold_id: uuid.UUID) -> list[Payment]:
        return _payments(await self.conn.fetch(QUERIES.payments_of_hold, hold_id))

    async def lock_pending_of_hold(self, hold_id: uuid.UUID) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.lock_live_payment_of_hold, hold_id))

    async def attach_session(self, payment_id: uuid.UUID, session_id: str, url: str) -> bool | None:
        row = await self.conn.fetchrow(QUERIES.attach_session, payment_id, session_id, url)
        return None if row is None else bool(row["cancel_requested"])

    async def request_cancel(self, payment_id: uuid.UUID) -> tuple[bool, str | None]:
        row = await self.conn.fetchrow(QUERIES.request_cancel, payment_id)
        return (False, None) if row is None else (True, row["session_id"])

    async def settle(self, payment_id: uuid.UUID, status: str) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.settle, payment_id, status))

    async def paid_after_settlement(self, payment_id: uuid.UUID) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.paid_after_settlement, payment_id))

    async def refund_due(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.refund_due, payment_id, reason))

    async def refund_cancelled(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.refund_cancelled, payment_id, reason))

    async def booking_confirmed(self, payment_id: uuid.UUID) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.booking_confirmed, payment_id))

    async def claim_refunds(self, limit: int, lease_seconds: float) -> list[Payment]:
        return _payments(await self.conn.fetch(QUERIES.claim_refunds, limit, lease_seconds))

    async def mark_refunded(self, payment_id: uuid.UUID, refund_id: str) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.mark_refunded, payment_id, refund_id))

    async def refund_failed(self, payment_id: uuid.UUID, retry_in: float, error: str) -> None:
        await self.conn.execute(QUERIES.refund_failed, payment_id, retry_in, error)

    async def pending_to_reconcile(self, after_seconds: float, limit: int = 500) -> list[Pending]:
        rows = await self.conn.fetch(QUERIES.pending_to_reconcile, after_seconds, limit)
        return [Pending(payment=p, past=bool(r["past"]), cancel_requested=r["cancel_requested_at"] is not None)
                for r in rows if (p := _payment(r)) is not None]

    async def unresolved(self, bound_seconds: float) -> Unresolved:
        row = await self.conn.fetchrow(QUERIES.money_unresolved, bound_seconds)
        assert row is not None  # an aggregate always returns its row
        return Unresolved(refunds_pending=row["refunds_pending"], refunds_overdue=row["refunds_overdue"],
                          paid_unbooked=row["paid_unbooked"], oldest_refund_due=row["oldest_refund_due"])

    async def purge(self, events_after: float, keys_after: float) -> tuple[str, str]:
        events = await self.conn.execute(QUERIES.delete_events_before, events_after)
        keys = await self.conn.execute(QUERIES.delete_keys_before, keys_after)
        return events, keys


class PgIdempotencyRepository(IdempotencyRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def get(self, customer_id: int, key: str) -> tuple[str, uuid.UUID] | None:
        row = await self.conn.fetchrow(QUERIES.get_key, customer_id, key)
        return None if row is None else (row["request_hash"], row["payment_id"])

    async def claim(self, customer_id: int, key: str, request_hash: str, payment_id: uuid.UUID) -> bool:
        return await self.conn.fetchval(QUERIES.insert_key, customer_id, key, request_hash, payment_id) is not None


class PgCallbackEventRepository(CallbackEventRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def seen(self, event_id: str) -> bool:
        return await self.conn.fetchval(QUERIES.event_seen, event_id) is not None

    async def record(self, event_id: str, event_type: str, session_id: str | None) -> bool:
        return await self.conn.fetchval(QUERIES.record_event, event_id, event_type, session_id) is not None


class PgPaymentsUnitOfWork(PostgresUnitOfWork, PaymentsUnitOfWork):
    def bind(self, conn: Conn) -> None:
        self._outbox_conn = conn
        self.payments = PgPaymentRepository(conn)
        self.keys = PgIdempotencyRepository(conn)
        self.callbacks = PgCallbackEventRepository(conn)

    async def publish(self, event: Any) -> None:
        await outbox.append(self._outbox_conn, event)  # type: ignore[arg-type]  # a pool proxy is a Connection
