"""HoldRepository on the in-memory schema (sql/holds.sql, sql/schema.sql): lazy expiry, the catalogue's status, the
longest extension, the cancellation deadline; the contract tests hold it to them."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import orjson
from hold_service.domain.catalogue import BookingView, CatalogueQuery, cursor
from hold_service.domain.hall import SeatPlace, ShowtimeDetails, from_price_cents
from hold_service.domain.model import Hold
from hold_service.service_layer.ports import (
    Backlog,
    Cancellation,
    Extension,
    GateSeat,
    HoldRepository,
    Released,
)
from ticketing_testing.in_memory import MemoryTransaction

from .rules import as_seen, hold_expired, release_hold, seat_is_free, seat_map_event
from .tables import Seat, Showtime


class FakeHoldRepository(HoldRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def add_showtime(self, details: ShowtimeDetails, places: list[SeatPlace]) -> bool:
        if details.showtime_id in self.tx["showtimes"]:
            return False
        self.tx["showtimes"][details.showtime_id] = Showtime(details, {p.code: p for p in places})
        self.tx["seats"].update({(details.showtime_id, p.code): Seat() for p in places})
        return True

    async def adopt_currency(self, currency: str) -> None:
        for showtime_id, showtime in list(self.tx["showtimes"].items()):
            if showtime.details.currency is None:  # rows are immutable: the table gets a new one
                self.tx["showtimes"][showtime_id] = replace(showtime, details=replace(showtime.details,
                                                                                      currency=currency))

    async def catalogue(self, query: CatalogueQuery, close_minutes: float, limit: int, next_page: str) -> bytes:
        listed = sorted(((sid, s) for sid, s in self.tx["showtimes"].items()
                         if query.starts_from <= s.starts_at < query.until
                         and query.cinema in (None, s.details.cinema)
                         and (query.after is None or (s.starts_at, sid) > query.after)),
                        key=lambda x: (x[1].starts_at, x[0]))
        last = listed[limit - 1] if len(listed) > limit else None
        return orjson.dumps({"showtimes": [self._listed(sid, s, close_minutes) for sid, s in listed[:limit]],
                             "next": next_page + cursor(last[1].starts_at, last[0]) if last else None})

    def _listed(self, showtime_id: int, showtime: Showtime, close_minutes: float) -> dict[str, Any]:
        d = showtime.details
        free = sum(1 for (sid, _), seat in self.tx["seats"].items() if sid == showtime_id
                   and seat_is_free(seat, self.tx.now))
        status = ("CANCELLED" if showtime.status == "CANCELLED" else "CLOSED"
                  if not showtime.on_sale(self.tx.now, close_minutes) else "SOLD_OUT" if free == 0 else "ON_SALE")
        return {"showtimeId": showtime_id, "title": d.title, "startsAt": d.starts_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "durationMinutes": d.duration_minutes, "cinema": d.cinema, "hall": d.hall, "timeZone": d.time_zone,
                "status": status, "seatsAvailable": free, "fromPriceCents": from_price_cents(d.prices),
                "currency": d.currency, "waitingRoom": False}

    async def bookings_of(self, customer_id: int, limit: int) -> list[BookingView]:
        mine = sorted((b for b in self.tx["bookings"].values() if b.customer_id == customer_id),
                      key=lambda b: b.created_at or self.tx.now, reverse=True)
        views = []
        for b in mine[:limit]:
            d = self.tx["showtimes"][b.showtime_id].details
            views.append(BookingView(as_seen(b, self.tx.now), d.title, d.starts_at, d.cinema, d.hall, d.time_zone,
                                     currency=d.currency))
        return views

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        return as_seen(self.tx["bookings"].get(hold_id), self.tx.now)

    async def lock_by_booking(self, booking_id: uuid.UUID) -> Hold | None:
        found = next((b for b in self.tx["bookings"].values() if b.booking_id == booking_id), None)
        return as_seen(found, self.tx.now)

    async def release(self, hold_id: uuid.UUID, reason: str) -> Released | None:
        return release_hold(self.tx, hold_id, reason)

    async def cancel_booking(self, booking_id: uuid.UUID, reason: str, deadline_minutes: float) -> Cancellation:
        hold = next((b for b in self.tx["bookings"].values() if b.booking_id == booking_id), None)
        if hold is None:
            return Cancellation("NOT_FOUND")
        done = Cancellation("", hold.hold_id, hold.showtime_id, hold.seats)
        if hold.status != "BOOKED":
            return replace(done, outcome="ALREADY" if hold.status == "CANCELLED" else "NOT_BOOKED")
        starts_at = self.tx["showtimes"][hold.showtime_id].starts_at
        if reason == "CUSTOMER" and self.tx.now >= starts_at - timedelta(minutes=deadline_minutes):
            return replace(done, outcome="TOO_LATE")
        for code in hold.seats:
            self.tx["seats"][(hold.showtime_id, code)] = Seat()
        self.tx["bookings"][hold.hold_id] = replace(hold, status="CANCELLED")
        seat_map_event(self.tx, "BookingCancelled", hold, {
            "holdId": hold.hold_id, "seats": hold.seats, "reason": reason, "paymentId": hold.payment_id})
        return replace(done, outcome="CANCELLED")

    async def cancel_showtime(self, showtime_id: int, reason: str) -> bool | None:
        showtime = self.tx["showtimes"].get(showtime_id)
        if showtime is None:
            return None
        self.tx["showtimes"][showtime_id] = replace(showtime, status="CANCELLED")
        return showtime.status != "CANCELLED"

    async def cancelled_with_live(self, limit: int) -> list[int]:
        live = {b.showtime_id for b in self.tx["bookings"].values() if b.status in ("HELD", "BOOKED")}
        return sorted(sid for sid, s in self.tx["showtimes"].items() if s.status == "CANCELLED" and sid in live)[:limit]

    async def live_of_showtime(self, showtime_id: int, limit: int) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
        return [(b.hold_id, b.booking_id, b.status) for b in self.tx["bookings"].values()
                if b.showtime_id == showtime_id and b.status in ("HELD", "BOOKED")][:limit]

    def _expired(self) -> list[Hold]:
        return sorted((b for b in self.tx["bookings"].values() if hold_expired(b.status, b.expires_at, self.tx.now)),
                      key=lambda b: b.expires_at)

    async def sweep_expired(self, limit: int) -> list[Released]:
        ended = [release_hold(self.tx, b.hold_id, "EXPIRED") for b in self._expired()[:limit]]
        return [r for r in ended if r is not None]

    async def expired_backlog(self) -> Backlog:
        expired = self._expired()
        oldest = (self.tx.now - expired[0].expires_at).total_seconds() if expired else 0.0
        return Backlog(holds=len(expired), oldest_seconds=oldest)

    async def confirm(self, hold_id: uuid.UUID, payment_id: uuid.UUID, paid_cents: int) -> bool:
        hold = self.tx["bookings"].get(hold_id)
        if hold is None or hold.status != "HELD" or hold_expired(hold.status, hold.expires_at, self.tx.now):
            return False
        if self.tx["showtimes"][hold.showtime_id].status == "CANCELLED":
            return False
        for code in hold.seats:
            self.tx["seats"][(hold.showtime_id, code)] = Seat("BOOKED", hold_id)
        self.tx["bookings"][hold_id] = replace(hold, status="BOOKED", payment_id=payment_id)
        seat_map_event(self.tx, "BookingConfirmed", hold, {
            "holdId": hold_id, "seats": hold.seats, "amountCents": paid_cents,
            "discountCents": max(hold.amount_cents - paid_cents, 0), "paymentId": payment_id,
            **_ticket_details(self.tx["showtimes"][hold.showtime_id].details, hold)})
        return True

    async def extend(self, hold_id: uuid.UUID, until: datetime, max_seconds: float,
                     close_minutes: float = 0) -> Extension | None:
        hold = self.tx["bookings"].get(hold_id)
        if hold is None or hold.status != "HELD" or hold_expired(hold.status, hold.expires_at, self.tx.now):
            return None
        if not self.tx["showtimes"][hold.showtime_id].on_sale(self.tx.now, close_minutes):
            return Extension(hold.expires_at, moved=False, closed=True)
        assert hold.created_at is not None
        expires = min(max(hold.expires_at, until), hold.created_at + timedelta(seconds=max_seconds))
        if expires <= hold.expires_at:
            return Extension(hold.expires_at, moved=False)
        for code in hold.seats:
            self.tx["seats"][(hold.showtime_id, code)] = Seat("HELD", hold_id, expires)
        self.tx["bookings"][hold_id] = replace(hold, expires_at=expires)
        return Extension(expires, moved=True)

    async def gate_seats(self, showtime_id: int) -> list[GateSeat] | None:
        showtime = self.tx["showtimes"].get(showtime_id)
        if showtime is None or showtime.starts_at <= self.tx.now:
            return None
        return [GateSeat(code, s.hold_id, None if s.status == "BOOKED" else s.expires_at)
                for (sid, code), s in sorted(self.tx["seats"].items())
                if sid == showtime_id and s.hold_id is not None and not seat_is_free(s, self.tx.now)]

    async def emit(self, event: Any) -> None:
        if all(e.eventId != event.eventId for e in self.tx["outbox"].values()):  # the outbox's UNIQUE event_id
            self.tx["outbox"][self.tx.db.next_id()] = event


def _ticket_details(d: ShowtimeDetails, hold: Hold) -> dict[str, Any]:
    """confirm_hold's details of BookingConfirmed, each left out when not known."""
    details = {"title": d.title, "cinema": d.cinema, "hall": d.hall, "startsAt": d.starts_at, "timeZone": d.time_zone,
               "tickets": [t.record() for t in hold.tickets] or None}
    return {k: v for k, v in details.items() if v is not None}
