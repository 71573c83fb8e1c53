"""Postgres repository: wraps one connection; every statement is a named query in sql/holds.sql."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from ticketing import outbox
from ticketing.db import Queries, sql_dir
from ticketing.events import Outgoing, outgoing

import hold_service
from hold_service.domain.errors import TooManySeatsHeld
from hold_service.domain.model import Hold

# A plain connection or the pool's proxy for one; both speak the same protocol.
Conn = asyncpg.Connection | PoolConnectionProxy
Q = Queries.load(sql_dir(hold_service.__file__) / "holds.sql")
# Placeholders in a SeatsHeld payload that Postgres replaces (no real value gets near them).
EXPIRES_PLACEHOLDER = datetime(2999, 1, 1, tzinfo=UTC)
EXPIRES_JSON = '"2999-01-01T00:00:00Z"'  # how the catalogue encodes it
AMOUNT_PLACEHOLDER = 987_654_321_987_654_320
VERSION_PLACEHOLDER = 987_654_321_987_654_321  # replaced at COMMIT
EXPIRES_TOKEN = b'"expiresAt":' + EXPIRES_JSON.encode()
AMOUNT_TOKEN = b'"amountCents":%d' % AMOUNT_PLACEHOLDER
VERSION_TOKEN = b'"seatMapVersion":%d' % VERSION_PLACEHOLDER
CAP_REFUSED = "HL429"  # SQLSTATE of the commit-time cap check (migration 0003)


class BatchRefused(Exception):
    """take_seats_together wrote something it must not have: roll the batch back."""


@dataclass(frozen=True)
class Taken:
    """What take_seats saw and did; `expires_at` is None when it wrote nothing."""

    price_cents: int | None  # None: no such showtime
    held: int  # seats the customer held on the showtime before this request
    frees_in: int  # seconds until the first of those frees
    found: set[str]  # requested seats that exist
    taken: list[str]  # requested seats someone else holds or booked
    expires_at: datetime | None

    @classmethod
    def written(cls, seats: list[str], amount_cents: int, expires_at: datetime) -> Taken:
        """A hold that was written (so it passed every check: nothing the verdict fields would refuse)."""
        return cls(price_cents=amount_cents // len(seats), held=0, frees_in=1, found=set(seats), taken=[],
                   expires_at=expires_at)


@dataclass(frozen=True)
class TakeSeats:
    """One hold for take_seats. `event` is the SeatsHeld to write if the hold is taken, built with the
    placeholders above."""

    showtime_id: int
    seats: list[str]  # sorted, distinct
    hold_id: uuid.UUID
    customer_id: int
    ttl_seconds: float
    booking_id: uuid.UUID
    cap: int
    event: Any

    def message(self) -> Outgoing:
        """The SeatsHeld as it goes to the outbox, placeholders in."""
        message = outgoing(self.event)
        for token in (EXPIRES_TOKEN, AMOUNT_TOKEN, VERSION_TOKEN):
            if token not in message.value:
                raise ValueError(f"{self.event.type} lacks the placeholder {token!r}")
        return message

    def arguments(self) -> tuple[Any, ...]:
        """take_seats' parameters."""
        message = self.message()
        return (self.showtime_id, self.seats, self.hold_id, self.customer_id, self.ttl_seconds, self.booking_id,
                self.cap, self.event.eventId, message.topic, message.key, message.value,
                outbox.headers_json(message), EXPIRES_JSON, str(AMOUNT_PLACEHOLDER), str(VERSION_PLACEHOLDER))


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

    async def take(self, request: TakeSeats) -> Taken:
        """Check, lock, take, book and append the request's SeatsHeld in one statement (sql: take_seats).

        Postgres writes expiresAt and amountCents into the event, and the seat-map version at COMMIT.
        Raises TooManySeatsHeld when the commit-time cap check (migration 0003) refuses.
        """
        try:
            row = await self.conn.fetchrow(Q.take_seats, *request.arguments())
        except asyncpg.PostgresError as exc:
            if (refused := cap_refusal(exc)) is not None:
                raise refused from exc
            raise
        assert row is not None  # the statement always returns its one verdict row
        return Taken(price_cents=row["price_cents"], held=int(row["held"]), frees_in=int(row["frees_in"] or 1),
                     found=set(row["found"]), taken=list(row["taken"]), expires_at=row["expires_at"])

    async def take_together(self, showtime_id: int, requests: list[TakeSeats]) -> dict[uuid.UUID, Taken]:
        """Several holds of one showtime in one statement (sql: take_seats_together), in the caller's
        transaction; returns the holds it wrote. The others wrote nothing: asking each again with take()
        gives its verdict. Raises BatchRefused if a written hold did not get all its seats (cannot happen
        with the rows locked; the caller rolls back)."""
        first = requests[0]
        messages = [r.message() for r in requests]
        positions = [n for n, r in enumerate(requests, 1) for _ in r.seats]
        rows = await self.conn.fetch(  # the cap's commit-time check refuses at the caller's COMMIT
            Q.take_seats_together, showtime_id, first.ttl_seconds, first.cap,
            [r.hold_id for r in requests], [r.customer_id for r in requests], [r.booking_id for r in requests],
            [r.event.eventId for r in requests], [m.key for m in messages], [m.value for m in messages],
            [outbox.headers_json(m) for m in messages], messages[0].topic, positions,
            [s for r in requests for s in r.seats], EXPIRES_JSON, str(AMOUNT_PLACEHOLDER), str(VERSION_PLACEHOLDER))
        seats = {r.hold_id: r.seats for r in requests}
        written = {}
        for row in rows:
            if row["seats_taken"] != len(seats[row["hold_id"]]):  # cannot happen with the rows locked
                raise BatchRefused(f"hold {row['hold_id']} got {row['seats_taken']} of its seats")
            written[row["hold_id"]] = Taken.written(seats[row["hold_id"]], row["amount_cents"], row["expires_at"])
        return written

    async def version(self, showtime_id: int) -> int:
        row = await self.conn.fetchrow(Q.get_showtime, showtime_id)
        return 0 if row is None else int(row["seat_map_version"])

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


def cap_refusal(exc: asyncpg.PostgresError) -> TooManySeatsHeld | None:
    """The commit-time cap check's refusal as the domain error (DETAIL: 'held frees_in cap'); else None."""
    if exc.sqlstate != CAP_REFUSED:
        return None
    held, frees_in, cap = (int(x) for x in (exc.detail or "0 1 0").split())
    return TooManySeatsHeld(held, cap, frees_in)
