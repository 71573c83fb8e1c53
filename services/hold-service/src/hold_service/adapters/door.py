"""The door's Postgres repository: every statement is a named query in sql/door.sql."""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg
import orjson
from ticketing.db import Queries, sql_dir
from ticketing.unit_of_work import Conn

import hold_service
from hold_service.domain.door import BookingAtDoor
from hold_service.domain.model import Ticket
from hold_service.service_layer.door_ports import DoorCounts, DoorRepository

Q = Queries.load(sql_dir(hold_service.__file__) / "door.sql")


def _booking(row: asyncpg.Record) -> BookingAtDoor:
    tickets = tuple(Ticket.from_record(t) for t in orjson.loads(row["tickets"] or "[]"))
    return BookingAtDoor(booking_id=row["booking_id"], customer_id=row["customer_id"],
                         showtime_id=row["showtime_id"], status=row["status"], seats=tuple(row["seats"]),
                         tickets=tickets, checked_in_at=row["checked_in_at"],
                         checked_in_door=row["checked_in_door"], title=row["title"], starts_at=row["starts_at"],
                         duration_minutes=row["duration_minutes"], showtime_status=row["showtime_status"])


class PgDoorRepository(DoorRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def booking(self, booking_id: uuid.UUID) -> BookingAtDoor | None:
        row = await self.conn.fetchrow(Q.booking_at_door, booking_id)
        return None if row is None else _booking(row)

    async def admit(self, booking_id: uuid.UUID, at: datetime, door: str, offline: bool) -> bool:
        return await self.conn.fetchval(Q.admit_booking, booking_id, at, door, offline) is not None

    async def counts(self, showtime_id: int) -> DoorCounts:
        row = await self.conn.fetchrow(Q.door_counts, showtime_id)
        assert row is not None  # an aggregate always returns its row
        return DoorCounts(row["booked"], row["booked_seats"], row["admitted"], row["admitted_seats"])
