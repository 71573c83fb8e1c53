"""The notifier's Postgres repositories (customer directory, points ledger) and its unit of work.

Consumer handlers run in a unit of work joined to the idempotent consumer's transaction, so the inbox row,
the points credit and the queued e-mail commit or roll back together.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from ticketing.db import Queries, sql_dir
from ticketing.unit_of_work import Conn, PostgresUnitOfWork

from notifier.adapters.email_queue import PgEmailAdmin, PgEmailQueue
from notifier.domain.messages import Contact
from notifier.service_layer.ports import (
    BookingRecord,
    BookingRecords,
    CustomerDirectory,
    NotifierUnitOfWork,
    PointsLedger,
    WithoutAddress,
)

QUERIES = Queries.load(sql_dir(str(Path(__file__).resolve().parent)) / "notifier.sql")


class PgCustomerDirectory(CustomerDirectory):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def get(self, customer_id: int) -> Contact | None:
        row = await self.conn.fetchrow(QUERIES.get_customer, customer_id)
        return None if row is None else Contact(row["customer_id"], row["email"], row["name"], row["locale"])

    async def upsert(self, contact: Contact) -> None:
        await self.conn.execute(QUERIES.upsert_customer, contact.customer_id, contact.email, contact.name,
                                contact.locale)

    async def all(self) -> list[Contact]:
        rows = await self.conn.fetch(QUERIES.list_customers)
        return [Contact(r["customer_id"], r["email"], r["name"], r["locale"]) for r in rows]

    async def record_without_address(self, event_id: uuid.UUID, booking_id: uuid.UUID, customer_id: int,
                                     event_type: str) -> bool:
        return await self.conn.fetchval(QUERIES.record_without_address, event_id, booking_id, customer_id,
                                        event_type) is not None

    async def without_address(self, limit: int) -> list[WithoutAddress]:
        rows = await self.conn.fetch(QUERIES.list_without_address, limit)
        return [WithoutAddress(**dict(r)) for r in rows]


class PgPointsLedger(PointsLedger):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def credit(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID, amount_cents: int,
                     points: int) -> bool:
        credited = await self.conn.fetchval(QUERIES.credit_points, booking_id, customer_id, event_id,
                                            amount_cents, points)
        return credited is not None


def _record(row: asyncpg.Record | None) -> BookingRecord | None:
    if row is None:
        return None
    return BookingRecord(confirmed=None if row["confirmed"] is None else json.loads(row["confirmed"]),
                         refund_cents=row["refund_cents"], cancelled_by=row["cancelled_by"])


class PgBookingRecords(BookingRecords):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def record_confirmed(self, booking_id: uuid.UUID, customer_id: int, data: dict[str, Any]) -> None:
        await self.conn.execute(QUERIES.record_confirmed, booking_id, customer_id, json.dumps(data, default=str))

    async def record_refund(self, booking_id: uuid.UUID, customer_id: int, amount_cents: int) -> bool:
        return bool(await self.conn.fetchval(QUERIES.record_refund, booking_id, customer_id, amount_cents))

    async def record_cancelled(self, booking_id: uuid.UUID, customer_id: int,
                               event_id: uuid.UUID) -> BookingRecord | None:
        return _record(await self.conn.fetchrow(QUERIES.record_cancelled, booking_id, customer_id, event_id))

    async def get(self, booking_id: uuid.UUID) -> BookingRecord | None:
        return _record(await self.conn.fetchrow(QUERIES.get_booking, booking_id))


class PgNotifierUnitOfWork(PostgresUnitOfWork, NotifierUnitOfWork):
    def bind(self, conn: Conn) -> None:
        self.customers = PgCustomerDirectory(conn)
        self.bookings = PgBookingRecords(conn)
        self.points = PgPointsLedger(conn)
        self.emails = PgEmailQueue(conn)
        self.email_admin = PgEmailAdmin(conn)
