"""Postgres access for payments, idempotency keys and callback ids (wraps one connection)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from ticketing.db import Queries

from payment_service.domain.model import Payment

# A plain connection (consumer) or a pool proxy (API): both speak the same protocol.
Conn = asyncpg.Connection | PoolConnectionProxy
QUERIES = Queries.load(Path(__file__).resolve().parents[1] / "sql" / "payments.sql")

_PAYMENT_FIELDS = ("payment_id", "hold_id", "booking_id", "customer_id", "showtime_id", "amount_cents",
                   "discount_cents", "voucher_code", "status", "expires_at", "session_id", "redirect_url",
                   "refund_id")


def _payment(row: asyncpg.Record | None) -> Payment | None:
    return None if row is None else Payment(**{f: row[f] for f in _PAYMENT_FIELDS})


class PaymentRepository:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def add(self, p: Payment, idempotency_key: str) -> None:
        await self.conn.execute(QUERIES.insert_payment, p.payment_id, p.hold_id, p.booking_id, p.customer_id,
                                p.showtime_id, p.amount_cents, p.discount_cents, p.voucher_code,
                                idempotency_key, p.expires_at)

    async def get(self, payment_id: uuid.UUID, *, lock: bool = False) -> Payment | None:
        query = QUERIES.get_payment_for_update if lock else QUERIES.get_payment
        return _payment(await self.conn.fetchrow(query, payment_id))

    async def live_of_hold(self, hold_id: uuid.UUID) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.live_payment_of_hold, hold_id))

    async def attach_session(self, payment_id: uuid.UUID, session_id: str, url: str) -> bool:
        return await self.conn.fetchval(QUERIES.attach_session, payment_id, session_id, url) is not None

    async def transition(self, payment_id: uuid.UUID, to: str, from_: list[str]) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.transition, payment_id, to, from_))

    async def mark_refunded(self, payment_id: uuid.UUID, refund_id: str) -> Payment | None:
        return _payment(await self.conn.fetchrow(QUERIES.mark_refunded, payment_id, refund_id))

    async def pending_older_than(self, seconds: float, limit: int = 500) -> list[Payment]:
        rows = await self.conn.fetch(QUERIES.pending_older_than, seconds, limit)
        return [p for p in map(_payment, rows) if p is not None]


class IdempotencyRepository:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def get(self, customer_id: int, key: str) -> asyncpg.Record | None:
        return await self.conn.fetchrow(QUERIES.get_key, customer_id, key)

    async def claim(self, customer_id: int, key: str, request_hash: str, payment_id: uuid.UUID) -> bool:
        return await self.conn.fetchval(QUERIES.insert_key, customer_id, key, request_hash,
                                        payment_id) is not None

    async def store_response(self, customer_id: int, key: str, status: int, body: dict[str, Any]) -> None:
        await self.conn.execute(QUERIES.store_response, customer_id, key, status, body)


class CallbackEventRepository:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def seen(self, event_id: str) -> bool:
        return await self.conn.fetchval(QUERIES.event_seen, event_id) is not None

    async def record(self, event_id: str, event_type: str, session_id: str | None) -> bool:
        """True the first time; the UNIQUE key makes a concurrent replay wait, then see the row."""
        return await self.conn.fetchval(QUERIES.record_event, event_id, event_type, session_id) is not None
