"""Postgres repository: wraps one connection; every statement is a named query in sql/holds.sql."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from ticketing import outbox
from ticketing.db import Queries, sql_dir
from ticketing.events import outgoing

import hold_service
from hold_service.domain.model import Hold

# A plain connection or the pool's proxy for one; both speak the same protocol.
Conn = asyncpg.Connection | PoolConnectionProxy
Q = Queries.load(sql_dir(hold_service.__file__) / "holds.sql")
VERSION_PLACEHOLDER = 987_654_321_987_654_321  # no real version gets near it; replaced at COMMIT


@dataclass(frozen=True)
class Taken:
    """What take_seats saw and did; `expires_at` is None when it wrote nothing."""

    price_cents: int | None  # None: no such showtime
    held: int  # seats the customer held on the showtime before this request
    frees_in: int  # seconds until the first of those frees
    found: set[str]  # requested seats that exist
    taken: list[str]  # requested seats someone else holds or booked
    expires_at: datetime | None


def _hold(row: asyncpg.Record, version: int = 0) -> Hold:
    return Hold(hold_id=row["hold_id"], booking_id=row["booking_id"], customer_id=row["customer_id"],
                showtime_id=row["showtime_id"], seats=list(row["seats"]), status=row["status"],
                expires_at=row["expires_at"], amount_cents=row["amount_cents"],
                payment_id=row["payment_id"], seat_map_version=version)


class HoldRepository:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def add_showtime(self, showtime_id: int, title: str, starts_at: datetime, price_cents: int,
                           seats: list[str]) -> bool:
        if await self.conn.fetchval(Q.insert_showtime, showtime_id, title, starts_at, price_cents) is None:
            return False
        await self.conn.execute(Q.insert_seats, showtime_id, seats)
        return True

    async def lock_customer(self, customer_id: int, showtime_id: int) -> None:
        """Serialise one customer's holds on one showtime so the held-seat cap cannot be raced past.

        Its own statement: the next one's snapshot must be taken after the lock is granted.
        """
        await self.conn.execute(Q.lock_customer_showtime, customer_id, showtime_id)

    async def take(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, customer_id: int,
                   ttl_seconds: float, booking_id: uuid.UUID, cap: int) -> Taken:
        """Check, lock, take, book and bump the version in one round trip (sql: take_seats)."""
        row = await self.conn.fetchrow(Q.take_seats, showtime_id, seats, hold_id, customer_id, ttl_seconds,
                                       booking_id, cap)
        assert row is not None  # the statement always returns its one verdict row
        return Taken(price_cents=row["price_cents"], held=int(row["held"]), frees_in=int(row["frees_in"] or 1),
                     found=set(row["found"]), taken=list(row["taken"]), expires_at=row["expires_at"])

    async def version(self, showtime_id: int) -> int:
        row = await self.conn.fetchrow(Q.get_showtime, showtime_id)
        return 0 if row is None else int(row["seat_map_version"])

    async def lock_seats(self, showtime_id: int, seats: list[str]) -> dict[str, bool]:
        """Seat code -> free, for the seats that exist; locked in code order."""
        rows = await self.conn.fetch(Q.lock_seats, showtime_id, seats)
        return {r["seat_code"]: r["free"] for r in rows}

    async def bump_version(self, showtime_id: int) -> int:
        return int(await self.conn.fetchval(Q.bump_version, showtime_id))

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        row = await self.conn.fetchrow(Q.get_booking, hold_id)
        return None if row is None else _hold(row)

    async def lock(self, hold_id: uuid.UUID) -> tuple[Hold, bool] | None:
        """The hold, locked, and whether it is past its time (Postgres' clock)."""
        row = await self.conn.fetchrow(Q.lock_booking, hold_id)
        return None if row is None else (_hold(row), bool(row["expired"]))

    async def lock_by_booking(self, booking_id: uuid.UUID) -> tuple[Hold, bool] | None:
        row = await self.conn.fetchrow(Q.lock_booking_by_booking_id, booking_id)
        return None if row is None else (_hold(row), bool(row["expired"]))

    async def free_seats(self, hold: Hold) -> list[str]:
        await self.conn.fetch(Q.lock_seats, hold.showtime_id, hold.seats)  # same lock order as holds
        rows = await self.conn.fetch(Q.free_hold_seats, hold.showtime_id, hold.seats, hold.hold_id)
        return [r["seat_code"] for r in rows]

    async def set_status(self, hold_id: uuid.UUID, status: str) -> None:
        await self.conn.execute(Q.set_booking_status, hold_id, status)

    async def confirm(self, hold: Hold, payment_id: uuid.UUID) -> bool:
        await self.conn.fetch(Q.lock_seats, hold.showtime_id, hold.seats)
        done = await self.conn.fetchval(Q.confirm_hold, hold.showtime_id, hold.seats, hold.hold_id,
                                        payment_id)
        return done is not None

    async def claim_expired(self, limit: int) -> list[uuid.UUID]:
        return [r["hold_id"] for r in await self.conn.fetch(Q.claim_expired_holds, limit)]

    async def seat_map(self, showtime_id: int) -> dict[str, Any] | None:
        row = await self.conn.fetchrow(Q.seat_map, showtime_id)
        if row is None:
            return None
        return {"showtimeId": showtime_id, "version": row["version"], "seats": row["seats"]}

    async def emit(self, event: Any) -> None:
        await outbox.append(self.conn, event)  # type: ignore[arg-type]

    async def emit_versioned_at_commit(self, showtime_id: int, event_for: Callable[[int], Any]) -> None:
        """Append `event_for(version)`; the showtime's next seat-map version is stamped in at COMMIT.

        The event is encoded once by the catalogue with a placeholder version; a deferred trigger
        (migration 0002) bumps the version and writes its digits over the placeholder's.
        """
        if not self.conn.is_in_transaction():
            raise RuntimeError("outbox append outside a transaction would publish uncommitted facts")
        event = event_for(VERSION_PLACEHOLDER)
        message = outgoing(event)
        if b'"seatMapVersion":%d' % VERSION_PLACEHOLDER not in message.value:
            raise ValueError(f"{event.type} carries no seatMapVersion")
        await self.conn.execute(Q.emit_versioned_at_commit, event.eventId, message.topic, message.key,
                                message.value, outbox.headers_json(message), showtime_id,
                                str(VERSION_PLACEHOLDER))


class IdempotencyRepository:
    """First response per (customer, Idempotency-Key); a twin request waits on the key's row lock."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def claim(self, customer_id: int, key: str, fingerprint: str) -> asyncpg.Record | None:
        """None when this request is the first with the key; else the stored row."""
        if await self.conn.fetchval(Q.claim_idempotency_key, customer_id, key, fingerprint) is not None:
            return None
        return await self.conn.fetchrow(Q.get_idempotency_key, customer_id, key)

    async def store(self, customer_id: int, key: str, status: int, body: dict[str, Any]) -> None:
        await self.conn.execute(Q.store_idempotent_response, customer_id, key, status, body)

    async def purge(self, retention_hours: float) -> None:
        await self.conn.execute(Q.delete_old_idempotency_keys, retention_hours)
