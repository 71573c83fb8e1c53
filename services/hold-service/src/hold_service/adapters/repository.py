"""Postgres repositories: each wraps one connection; every statement is a named query in sql/holds.sql."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg
import orjson
from ticketing import outbox
from ticketing.db import Queries, sql_dir
from ticketing.envelope import caused_by, sql_form
from ticketing.events import BOOKING_EVENTS
from ticketing.unit_of_work import Conn, PostgresUnitOfWork

import hold_service
from hold_service.adapters.door import PgDoorRepository
from hold_service.domain.catalogue import BookingView, CatalogueQuery
from hold_service.domain.errors import ShowtimeClosed, TooManySeatsHeld
from hold_service.domain.hall import SeatPlace, ShowtimeDetails, from_price_cents
from hold_service.domain.model import Hold, TakeSeats, Ticket, Verdict
from hold_service.service_layer.ports import (
    Backlog,
    Cancellation,
    Extension,
    GateSeat,
    HoldRepository,
    HoldsUnitOfWork,
    IdempotencyRepository,
    Released,
)

Q = Queries.load(sql_dir(hold_service.__file__) / "holds.sql")
CAP_REFUSED = "HL429"  # SQLSTATE of the commit-time cap check (check_customer_seat_cap, sql/schema.sql)
CANCELLED_SHOWTIME = "HL409"  # SQLSTATE of a hold or booking meeting its showtime's cancellation (schema.sql)
# The events written in SQL's envelope; "currency": those with an amount carry the showtime's (0.1.0's pods: none).
# "versionsAfterCommit": their seat-map versions are given after COMMIT (sql/schema.sql append_seat_map_events).
FORM = orjson.dumps({**orjson.loads(sql_form(BOOKING_EVENTS, source="hold-service")), "currency": True,
                     "versionsAfterCommit": True}).decode()


def cause() -> str:
    """The cause headers of the events written now (ticketing.envelope.caused_by), for the SQL writer."""
    return orjson.dumps(caused_by()).decode()


def _hold(row: asyncpg.Record) -> Hold:
    return Hold(hold_id=row["hold_id"], booking_id=row["booking_id"], customer_id=row["customer_id"],
                showtime_id=row["showtime_id"], seats=list(row["seats"]), status=row["status"],
                expires_at=row["expires_at"], amount_cents=row["amount_cents"], payment_id=row["payment_id"],
                created_at=row["created_at"], tickets=_tickets(row["tickets"]))


def _tickets(records: str | None) -> tuple[Ticket, ...]:
    """The priced seats of a JSON list (a refused hold's verdict may name seats that do not exist or have no
    price)."""
    return tuple(Ticket.from_record(t) for t in orjson.loads(records or "[]") if t["priceCents"] is not None)


def _verdict(row: asyncpg.Record) -> Verdict:
    return Verdict(amount_cents=row["amount_cents"], found=frozenset(row["found"]), taken=list(row["taken"]),
                   expires_at=row["expires_at"], earlier=row["earlier"], tickets=_tickets(row["tickets"]),
                   unpriced=tuple(row["unpriced"]), closed=row["closed"], lone=tuple(row["lone"]),
                   suggested=tuple(row["suggested"] or ()))


def _released(hold_id: uuid.UUID, row: asyncpg.Record | None) -> Released | None:
    return None if row is None else _ended(hold_id, row)


def _ended(hold_id: uuid.UUID, row: asyncpg.Record) -> Released:
    return Released(hold_id=hold_id, showtime_id=row["showtime_id"], seats=list(row["seats"]),
                    reason=row["reason"], freed=list(row["freed"]))


def cap_refusal(exc: asyncpg.PostgresError) -> TooManySeatsHeld | ShowtimeClosed | None:
    """The commit-time cap check's refusal as the domain error (DETAIL: 'held frees_in cap'), or the showtime's
    cancellation met on its row; else None."""
    if exc.sqlstate == CANCELLED_SHOWTIME:
        return ShowtimeClosed("the showtime is cancelled")
    if exc.sqlstate != CAP_REFUSED:
        return None
    held, frees_in, cap = (int(x) for x in (exc.detail or "0 1 0").split())
    return TooManySeatsHeld(held, cap, frees_in)


async def take(conn: Conn, request: TakeSeats, cause: str = "[]", beside_locked: bool = False) -> Verdict:
    """One hold (sql take_seats, alone), its events with the `cause` headers (JSON); TooManySeatsHeld if the cap
    refuses at COMMIT. Under the no-lone-seat rule, unless `beside_locked`, it first locks the seats beside (sql
    lock_beside)."""
    try:
        row, = await _take_seats(conn, request.showtime_id, [(request, cause)], beside_locked)
        if row["unlocked"]:
            async with conn.transaction():
                await conn.execute(Q.lock_beside, request.showtime_id, request.seats)
                row, = await _take_seats(conn, request.showtime_id, [(request, cause)], True)
    except asyncpg.PostgresError as exc:
        if (refused := cap_refusal(exc)) is not None:
            raise refused from exc
        raise
    return _verdict(row)


async def take_together(conn: Conn, showtime_id: int,
                        requests: list[tuple[TakeSeats, str]]) -> dict[uuid.UUID, Verdict | None]:
    """Several holds of one showtime (with their cause headers) in the same statement (sql take_seats): per hold
    its verdict, or None when the statement could not decide it together with the others (take() then does).
    Raises like take()."""
    try:
        rows = await _take_seats(conn, showtime_id, requests, False)
    except asyncpg.PostgresError as exc:
        if (refused := cap_refusal(exc)) is not None:
            raise refused from exc
        raise
    return {row["hold_id"]: _verdict(row) if row["settled"] else None for row in rows}


async def _take_seats(conn: Conn, showtime_id: int, requests: list[tuple[TakeSeats, str]],
                      beside_locked: bool) -> list[asyncpg.Record]:
    """sql take_seats on holds of one showtime; the TTL, cap and sales' close are the first hold's."""
    first = requests[0][0]
    return await conn.fetch(
        Q.take_seats, showtime_id, first.ttl_seconds, first.cap, [r.hold_id for r, _ in requests],
        [r.customer_id for r, _ in requests], [r.booking_id for r, _ in requests],
        [n for n, (r, _) in enumerate(requests, 1) for _ in r.seats], [s for r, _ in requests for s in r.seats],
        [c for _, c in requests], FORM, [t for r, _ in requests for t in r.types()], first.close_minutes,
        beside_locked)


class PgHoldRepository(HoldRepository):
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def add_showtime(self, details: ShowtimeDetails, places: list[SeatPlace]) -> bool:
        d = details
        if await self.conn.fetchval(Q.insert_showtime, d.showtime_id, d.title, d.starts_at,
                                    from_price_cents(d.prices), orjson.dumps(d.prices).decode(), d.duration_minutes,
                                    d.cinema, d.hall, d.time_zone, d.no_lone_seat, d.currency) is None:
            return False
        await self.conn.execute(Q.insert_seats, d.showtime_id, [p.code for p in places],
                                [p.category for p in places], [p.row for p in places], [p.x for p in places],
                                [p.rank for p in places])
        return True

    async def adopt_currency(self, currency: str) -> None:
        await self.conn.execute(Q.adopt_currency, currency)

    async def catalogue(self, query: CatalogueQuery, close_minutes: float, limit: int, next_page: str) -> bytes:
        after_start, after_id = query.after or (None, None)
        body: str = await self.conn.fetchval(Q.catalogue, query.starts_from, query.until, query.cinema,
                                             close_minutes, limit, after_start, after_id, next_page)
        return body.encode()

    async def bookings_of(self, customer_id: int, limit: int) -> list[BookingView]:
        return [BookingView(hold=_hold(row), title=row["title"], starts_at=row["starts_at"], cinema=row["cinema"],
                            hall=row["hall"], time_zone=row["time_zone"], checked_in_at=row["checked_in_at"],
                            currency=row["currency"])
                for row in await self.conn.fetch(Q.bookings_of, customer_id, limit)]

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        row = await self.conn.fetchrow(Q.get_booking, hold_id)
        return None if row is None else _hold(row)

    async def lock_by_booking(self, booking_id: uuid.UUID) -> Hold | None:
        row = await self.conn.fetchrow(Q.lock_booking_by_booking_id, booking_id)
        return None if row is None else _hold(row)

    async def release(self, hold_id: uuid.UUID, reason: str) -> Released | None:
        return _released(hold_id, await self.conn.fetchrow(Q.release_hold, hold_id, reason, FORM, cause()))

    async def sweep_expired(self, limit: int) -> list[Released]:
        rows = await self.conn.fetch(Q.sweep_expired, limit, FORM, cause())
        return [_ended(row["hold_id"], row) for row in rows]

    async def expired_backlog(self) -> Backlog:
        row = await self.conn.fetchrow(Q.expired_backlog)
        assert row is not None  # an aggregate: always one row
        return Backlog(holds=row["holds"], oldest_seconds=row["oldest_seconds"])

    async def confirm(self, hold_id: uuid.UUID, payment_id: uuid.UUID, paid_cents: int) -> bool:
        try:
            async with self.conn.transaction():  # a savepoint: the showtime's cancellation, met, undoes only this
                changes = await self.conn.fetchval(Q.confirm_hold, hold_id, payment_id, paid_cents, FORM, cause())
        except asyncpg.PostgresError as exc:
            if exc.sqlstate != CANCELLED_SHOWTIME:
                raise
            return False
        return changes is not None

    async def cancel_booking(self, booking_id: uuid.UUID, reason: str, deadline_minutes: float) -> Cancellation:
        row = await self.conn.fetchrow(Q.cancel_booking, booking_id, reason, deadline_minutes, FORM, cause())
        assert row is not None
        return Cancellation(outcome=row["outcome"], hold_id=row["hold_id"], showtime_id=row["showtime_id"],
                            seats=list(row["seats"] or ()))

    async def cancel_showtime(self, showtime_id: int, reason: str) -> bool | None:
        done: bool | None = await self.conn.fetchval(Q.cancel_showtime, showtime_id, reason)
        return done

    async def cancelled_with_live(self, limit: int) -> list[int]:
        return [row["showtime_id"] for row in await self.conn.fetch(Q.cancelled_with_live, limit)]

    async def live_of_showtime(self, showtime_id: int, limit: int) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
        rows = await self.conn.fetch(Q.live_of_showtime, showtime_id, limit)
        return [(r["hold_id"], r["booking_id"], r["status"]) for r in rows]

    async def extend(self, hold_id: uuid.UUID, until: datetime, max_seconds: float,
                     close_minutes: float = 0) -> Extension | None:
        row = await self.conn.fetchrow(Q.extend_hold, hold_id, until, max_seconds, close_minutes)
        return None if row is None else Extension(expires_at=row["expires_at"], moved=row["moved"],
                                                  closed=row["closed"])

    async def gate_seats(self, showtime_id: int) -> list[GateSeat] | None:
        row = await self.conn.fetchrow(Q.gate_seats, showtime_id)
        if row is None:
            return None
        return [GateSeat(code, hold, until) for code, hold, until in zip(row["seats"], row["holds"], row["expires"],
                                                                          strict=True)]

    async def emit(self, event: Any) -> None:
        await outbox.append(self.conn, event)  # type: ignore[arg-type]


class PgIdempotencyRepository(IdempotencyRepository):
    """First outcome per (customer, Idempotency-Key)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def claim(self, customer_id: int, key: str, fingerprint: str) -> dict[str, Any] | None:
        if await self.conn.fetchval(Q.claim_idempotency_key, customer_id, key, fingerprint) is not None:
            return None
        row = await self.conn.fetchrow(Q.get_idempotency_key, customer_id, key)
        assert row is not None  # claimed before, and keys are only purged after a day
        return {"fingerprint": row["request_hash"], "outcome": row["outcome"]}

    async def store(self, customer_id: int, key: str, outcome: dict[str, Any]) -> None:
        await self.conn.execute(Q.store_idempotent_outcome, customer_id, key, outcome)

    async def purge(self, retention_hours: float) -> None:
        await self.conn.execute(Q.delete_old_idempotency_keys, retention_hours)


class PgHoldsUnitOfWork(PostgresUnitOfWork, HoldsUnitOfWork):
    def bind(self, conn: Conn) -> None:
        self.holds, self.keys = PgHoldRepository(conn), PgIdempotencyRepository(conn)
        self.door = PgDoorRepository(conn)
