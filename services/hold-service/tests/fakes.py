"""In-memory fakes of hold-service's ports (service_layer/ports.py) for unit tests, and `fake_deps`.

They decide as Postgres (sql/holds.sql, sql/schema.sql) and Redis (adapters/lua) do: lazy expiry by one
clock, a hold all-or-nothing, the per-customer cap checked at commit, a seat-map version and an event per
change, the rate limit's moving window and the gate's all-or-nothing keys. The same contract tests run
against these and the real adapters (tests/integration/test_contract_*.py), and tests reach this
module through the `fakes` fixture of conftest.py.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import orjson
from hold_service.adapters.room_credentials import SignedCredentials
from hold_service.config import HoldSettings
from hold_service.domain.catalogue import BookingView, CatalogueQuery
from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.door import BookingAtDoor
from hold_service.domain.errors import TooManySeatsHeld
from hold_service.domain.hall import Prices, SeatPlace, ShowtimeDetails, from_price_cents, layout_hall, rows_hall
from hold_service.domain.model import Hold, TakeSeats, Verdict
from hold_service.domain.model import Ticket as HoldTicket
from hold_service.domain.room_rush import Crowd, OpenReason, enabled_after, mode_of
from hold_service.domain.waiting_room import (
    AdmissionPass,
    Joined,
    QueueView,
    RoomConfig,
    RoomFacts,
    RoomFigures,
    StepOutcome,
    Ticket,
)
from hold_service.service_layer.door_ports import DoorCounts, DoorRepository
from hold_service.service_layer.events import SOURCE, waiting_room_changed
from hold_service.service_layer.ports import (
    Admission,
    Admitted,
    Backlog,
    Cancellation,
    Deps,
    Extension,
    GateSeat,
    HoldRepository,
    HoldsUnitOfWork,
    HoldWriter,
    IdempotencyRepository,
    Released,
)
from hold_service.service_layer.room_ports import RoomQueue, RoomStore
from hold_service.service_layer.seat_map_ports import SeatMaps, SeatMapSubscription, SeatMapView
from hold_service.service_layer.showtimes import seat_map
from ticketing.events import booking_event
from ticketing_testing.in_memory import Clock, MemoryDb, MemoryTransaction, MemoryUnitOfWork, MemoryWorld

TABLES = ("showtimes", "seats", "bookings", "keys", "outbox", "checkins")  # bookings: hold id -> Hold (status as
# stored); checkins: booking id -> (at, door)
RATE_WINDOW = timedelta(minutes=1)


@dataclass(frozen=True)
class Showtime:
    details: ShowtimeDetails
    places: dict[str, SeatPlace]
    version: int = 0  # seatMapVersion
    status: str = "ON_SALE"  # or CANCELLED

    def on_sale(self, now: datetime, close_minutes: float) -> bool:
        """on_sale (sql/schema.sql)."""
        return self.status == "ON_SALE" and now < self.details.starts_at - timedelta(minutes=close_minutes)

    @property
    def title(self) -> str:
        return self.details.title

    @property
    def starts_at(self) -> datetime:
        return self.details.starts_at

    def price(self, seat: str, ticket_type: str) -> int | None:
        return self.details.prices.get(self.places[seat].category, {}).get(ticket_type)


@dataclass(frozen=True)
class Seat:
    status: str = "AVAILABLE"  # AVAILABLE | HELD | BOOKED
    hold_id: uuid.UUID | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Key:
    fingerprint: str
    created_at: datetime
    outcome: dict[str, Any] | None = None


def holds_db(clock: Clock | None = None) -> MemoryDb:
    return MemoryDb(*TABLES, clock=clock)


# --- the hold rules, each once (as the SQL functions of sql/schema.sql) ---------------------------

def hold_expired(status: str, expires_at: datetime | None, now: datetime) -> bool:
    return status == "HELD" and expires_at is not None and expires_at < now


def seat_is_free(seat: Seat, now: datetime) -> bool:
    return seat.status == "AVAILABLE" or hold_expired(seat.status, seat.expires_at, now)


def live_holds(tx: MemoryTransaction, customer_id: int, showtime_id: int) -> list[Hold]:
    """What the cap counts: the customer's holds of the showtime that are HELD and not expired."""
    return [b for b in tx["bookings"].values() if b.customer_id == customer_id and b.showtime_id == showtime_id
            and b.status == "HELD" and not hold_expired(b.status, b.expires_at, tx.now)]


def as_seen(hold: Hold | None, now: datetime) -> Hold | None:
    """A hold with its status as customers see it (get_booking): EXPIRED once its time passed."""
    if hold is None or not hold_expired(hold.status, hold.expires_at, now):
        return hold
    return replace(hold, status="EXPIRED")


def seat_map_event(tx: MemoryTransaction, type_: str, hold: Hold, data: dict[str, Any]) -> int:
    """append_seat_map_events: the showtime's next version, and its event to the outbox."""
    showtime = tx["showtimes"][hold.showtime_id]
    version = showtime.version + 1
    tx["showtimes"][hold.showtime_id] = replace(showtime, version=version)
    tx["outbox"][tx.db.next_id()] = booking_event(
        type_, source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
        customer_id=hold.customer_id, data={**data, "seatMapVersion": version})
    return version


def release_hold(tx: MemoryTransaction, hold_id: uuid.UUID, cancel_reason: str) -> Released | None:
    hold = tx["bookings"].get(hold_id)
    if hold is None or hold.status != "HELD":
        return None
    reason = "EXPIRED" if hold_expired(hold.status, hold.expires_at, tx.now) else cancel_reason
    seats = tx["seats"]
    freed = [c for c in hold.seats if (s := seats[(hold.showtime_id, c)]).hold_id == hold_id and s.status == "HELD"]
    for code in freed:
        tx["seats"][(hold.showtime_id, code)] = Seat()
    tx["bookings"][hold_id] = replace(hold, status="EXPIRED" if reason == "EXPIRED" else "RELEASED")
    version = None
    if freed:
        version = seat_map_event(tx, "SeatsReleased", hold, {"holdId": hold_id, "seats": freed, "reason": reason})
    return Released(hold_id=hold_id, showtime_id=hold.showtime_id, seats=hold.seats, reason=reason, freed=freed,
                    version=version)


def _ticket_details(d: ShowtimeDetails, hold: Hold) -> dict[str, Any]:
    """confirm_hold's details of BookingConfirmed, each left out when not known."""
    details = {"title": d.title, "cinema": d.cinema, "hall": d.hall, "startsAt": d.starts_at, "timeZone": d.time_zone,
               "tickets": [t.record() for t in hold.tickets] or None}
    return {k: v for k, v in details.items() if v is not None}


# --- the ports ----------------------------------------------------------------------------------------

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
        for showtime in self.tx["showtimes"].values():
            if showtime.details.currency is None:
                showtime.details = replace(showtime.details, currency=currency)

    async def catalogue(self, query: CatalogueQuery, close_minutes: float, limit: int) -> bytes:
        listed = sorted(((sid, s) for sid, s in self.tx["showtimes"].items()
                         if query.starts_from <= s.starts_at < query.until
                         and query.cinema in (None, s.details.cinema)), key=lambda x: (x[1].starts_at, x[0]))
        return orjson.dumps({"showtimes": [self._listed(sid, s, close_minutes) for sid, s in listed[:limit]]})

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
        version = seat_map_event(self.tx, "BookingCancelled", hold, {
            "holdId": hold.hold_id, "seats": hold.seats, "reason": reason, "paymentId": hold.payment_id})
        return replace(done, outcome="CANCELLED", version=version)

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

    async def confirm(self, hold_id: uuid.UUID, payment_id: uuid.UUID, paid_cents: int) -> int | None:
        hold = self.tx["bookings"].get(hold_id)
        if hold is None or hold.status != "HELD" or hold_expired(hold.status, hold.expires_at, self.tx.now):
            return None
        if self.tx["showtimes"][hold.showtime_id].status == "CANCELLED":
            return None
        for code in hold.seats:
            self.tx["seats"][(hold.showtime_id, code)] = Seat("BOOKED", hold_id)
        self.tx["bookings"][hold_id] = replace(hold, status="BOOKED", payment_id=payment_id)
        return seat_map_event(self.tx, "BookingConfirmed", hold, {
            "holdId": hold_id, "seats": hold.seats, "amountCents": paid_cents,
            "discountCents": max(hold.amount_cents - paid_cents, 0), "paymentId": payment_id,
            **_ticket_details(self.tx["showtimes"][hold.showtime_id].details, hold)})

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


class FakeIdempotencyRepository(IdempotencyRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def claim(self, customer_id: int, key: str, fingerprint: str) -> dict[str, Any] | None:
        stored = self.tx["keys"].get((customer_id, key))
        if stored is None:
            self.tx["keys"][(customer_id, key)] = Key(fingerprint, self.tx.now)
            return None
        return {"fingerprint": stored.fingerprint, "outcome": stored.outcome}

    async def store(self, customer_id: int, key: str, outcome: dict[str, Any]) -> None:
        stored = self.tx["keys"].get((customer_id, key))
        if stored is not None and stored.outcome is None:
            self.tx["keys"][(customer_id, key)] = replace(stored, outcome=outcome)

    async def purge(self, retention_hours: float) -> None:
        cutoff = self.tx.now - timedelta(hours=retention_hours)
        for k in [k for k, v in self.tx["keys"].items() if v.created_at < cutoff]:
            del self.tx["keys"][k]


class FakeDoorRepository(DoorRepository):
    """sql/door.sql: one admission per booked booking; an offline scan earlier than the recorded one replaces it."""

    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    def _hold(self, booking_id: uuid.UUID) -> Hold | None:
        return next((h for h in self.tx["bookings"].values() if h.booking_id == booking_id), None)

    async def booking(self, booking_id: uuid.UUID) -> BookingAtDoor | None:
        hold = self._hold(booking_id)
        if hold is None:
            return None
        show = self.tx["showtimes"][hold.showtime_id]
        at, door = self.tx["checkins"].get(booking_id, (None, None))
        return BookingAtDoor(hold.booking_id, hold.customer_id, hold.showtime_id, hold.status, tuple(hold.seats),
                             hold.tickets, at, door, show.title, show.starts_at, show.details.duration_minutes,
                             show.status)

    async def admit(self, booking_id: uuid.UUID, at: datetime, door: str, offline: bool) -> bool:
        hold, before = self._hold(booking_id), self.tx["checkins"].get(booking_id)
        if hold is None or hold.status != "BOOKED" or (before is not None and not (offline and before[0] > at)):
            return False
        self.tx["checkins"][booking_id] = (at, door)
        return True

    async def counts(self, showtime_id: int) -> DoorCounts:
        booked = [h for h in self.tx["bookings"].values() if h.showtime_id == showtime_id and h.status == "BOOKED"]
        admitted = [h for h in booked if h.booking_id in self.tx["checkins"]]
        return DoorCounts(len(booked), sum(len(h.seats) for h in booked), len(admitted),
                          sum(len(h.seats) for h in admitted))


class FakeHoldsUnitOfWork(MemoryUnitOfWork, HoldsUnitOfWork):
    def bind(self, tx: MemoryTransaction) -> None:
        self.holds, self.keys, self.door = FakeHoldRepository(tx), FakeIdempotencyRepository(tx), FakeDoorRepository(tx)


class FakeHoldWriter(HoldWriter):
    """take_seats: one hold, its own transaction; the cap is checked at its commit."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db

    async def take(self, request: TakeSeats) -> Verdict:
        await asyncio.sleep(0)  # the round trip to Postgres: other requests run meanwhile
        tx = self.db.begin()
        verdict = _take(tx, request)
        if verdict.expires_at is not None and not verdict.earlier:  # written: the commit-time cap check
            _check_cap(tx, request)
        tx.commit()
        return verdict


def _take(tx: MemoryTransaction, r: TakeSeats) -> Verdict:
    showtime = tx["showtimes"].get(r.showtime_id)
    earlier = r.hold_id in tx["bookings"]
    locked = {code: seat for code in r.seats if (seat := tx["seats"].get((r.showtime_id, code))) is not None}
    tickets = () if showtime is None else tuple(
        HoldTicket(c, showtime.places[c].category, t, showtime.price(c, t))  # type: ignore[arg-type]
        for c, t in zip(r.seats, r.types(), strict=True) if c in locked)
    unpriced = tuple(t.seat for t in tickets if t.price_cents is None)
    closed = showtime is not None and not showtime.on_sale(tx.now, r.close_minutes)
    amount = None if showtime is None else sum(t.price_cents or 0 for t in tickets)
    free = {code: seat_is_free(seat, tx.now) for code, seat in locked.items()}
    taken = [c for c in sorted(locked) if not free[c] and locked[c].hold_id != r.hold_id]
    complete = len(locked) == len(r.seats)
    if amount is None or closed or earlier or not complete or not all(free.values()) or unpriced:
        mine = complete and all(s.hold_id == r.hold_id and s.status == "HELD" and not free[c]
                                for c, s in locked.items())
        expires = min(s.expires_at for s in locked.values() if s.expires_at) if mine else None
        return Verdict(amount_cents=amount, found=frozenset(locked), taken=taken, expires_at=expires, earlier=earlier,
                       tickets=tickets, unpriced=unpriced, closed=closed)
    expires_at = tx.now + timedelta(seconds=r.ttl_seconds)
    for old_id in dict.fromkeys(s.hold_id for s in locked.values() if s.status == "HELD"):  # lazy expiry
        seats = sorted(c for c, s in locked.items() if s.hold_id == old_id)
        seat_map_event(tx, "SeatsReleased", tx["bookings"][old_id],
                       {"holdId": old_id, "seats": seats, "reason": "EXPIRED"})
    for code in r.seats:
        tx["seats"][(r.showtime_id, code)] = Seat("HELD", r.hold_id, expires_at)
    hold = Hold(hold_id=r.hold_id, booking_id=r.booking_id, customer_id=r.customer_id, showtime_id=r.showtime_id,
                seats=r.seats, status="HELD", expires_at=expires_at, amount_cents=amount,
                created_at=tx.now, tickets=tickets)
    tx["bookings"][r.hold_id] = hold
    seat_map_event(tx, "SeatsHeld", hold, {"holdId": r.hold_id, "seats": r.seats, "expiresAt": expires_at,
                                           "amountCents": hold.amount_cents})
    return Verdict(amount_cents=amount, found=frozenset(locked), taken=[], expires_at=expires_at, tickets=tickets)


def _check_cap(tx: MemoryTransaction, r: TakeSeats) -> None:
    """check_customer_seat_cap: over the cap, the commit fails and nothing of the hold is written."""
    held = live_holds(tx, r.customer_id, r.showtime_id)
    if sum(len(h.seats) for h in held) <= r.cap:
        return
    others = [h.expires_at for h in held if h.hold_id != r.hold_id]
    frees_in = math.ceil((min(others) - tx.now).total_seconds()) if others else 1
    raise TooManySeatsHeld(sum(len(h.seats) for h in held) - len(r.seats), r.cap, frees_in)


class FakeAdmission(Admission):
    """The rate limits (a moving window per customer and per address), the waiting room's slot (the fake
    queue's live slots) and the seat gate (keys with a TTL; a mark per showtime whose gate was filled),
    in memory. `forget()` is Redis losing everything: the gate then lets everything through to the writer,
    and says its mark is gone, until it is refilled."""

    def __init__(self, clock: Clock, per_minute: int, per_address_per_minute: int, queue: FakeRoomQueue) -> None:
        self.clock, self.per_minute, self.per_address, self.queue = clock, per_minute, per_address_per_minute, queue
        self._hits: dict[int | str, list[datetime]] = {}
        self._keys: dict[tuple[int, str], tuple[uuid.UUID, datetime]] = {}
        self._marks: dict[int, datetime] = {}  # showtime -> until when its gate is marked filled

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        waits = [self._count(customer_id, self.per_minute)]
        if address is not None:
            waits.append(self._count(address, self.per_address))
        if any(w is not None for w in waits):
            return Admitted(max(w for w in waits if w is not None), [])
        if slot is not None and not self.queue.live(slot):
            return Admitted(None, [], slot_ended=True)
        now = self.clock.now()
        taken = [s for s in seats if self._owner(showtime_id, s) not in (None, hold_id)]
        if not taken:
            self._keys.update({(showtime_id, s): (hold_id, now + timedelta(seconds=ttl_seconds)) for s in seats})
        return Admitted(None, taken, gate_lost=self._marks.get(showtime_id, now) <= now)

    async def address_wait(self, address: str) -> int | None:
        return self._count(address, self.per_address)

    def _count(self, who: int | str, per_minute: int) -> int | None:
        """Seconds to wait, or None and this request counted."""
        now = self.clock.now()
        hits = [t for t in self._hits.get(who, []) if t > now - RATE_WINDOW]
        if len(hits) >= per_minute:
            return max(1, math.ceil((hits[-per_minute] + RATE_WINDOW - now).total_seconds()))
        self._hits[who] = [*hits, now]
        return None

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        for s in seats:
            if self._owner(showtime_id, s) == hold_id:
                del self._keys[(showtime_id, s)]

    async def refill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        now, written = self.clock.now(), 0
        mark = now + timedelta(seconds=mark_seconds)
        for seat in seats:
            self._keys[(showtime_id, seat.code)] = (seat.hold_id, seat.until or mark)
            written += 1
        self._marks[showtime_id] = mark
        return written

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        for s in seats:
            if self._owner(showtime_id, s) == hold_id:
                self._keys[(showtime_id, s)] = (hold_id, until)

    def knows(self, showtime_id: int, seat: str) -> uuid.UUID | None:
        """The hold the gate says has the seat (None: it lets requests for it through)."""
        return self._owner(showtime_id, seat)

    def _owner(self, showtime_id: int, seat: str) -> uuid.UUID | None:
        key = self._keys.get((showtime_id, seat))
        return None if key is None or key[1] <= self.clock.now() else key[0]

    def forget(self) -> None:
        self._keys.clear()
        self._hits.clear()
        self._marks.clear()


class FakeSeatMaps(SeatMaps):
    """The committed rows as the map, statuses as recorded (a lapsed hold stays HELD until its release is
    written), at once: the real maps follow the changes a few milliseconds after COMMIT. No streams here
    (subscribe raises as the real one does without its feed); the stream tests run the real process."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db

    async def get(self, showtime_id: int) -> SeatMapView | None:
        tx = self.db.begin()
        showtime = tx["showtimes"].get(showtime_id)
        if showtime is None:
            return None
        seats = sorted(((code, s) for (sid, code), s in tx["seats"].items() if sid == showtime_id),
                       key=lambda cs: _hall_order(cs[0]))
        d, places = showtime.details, showtime.places
        body = {"showtimeId": showtime_id, "title": showtime.title,
                "startsAt": showtime.starts_at.isoformat().replace("+00:00", "Z"),
                "durationMinutes": d.duration_minutes, "cinema": d.cinema, "hall": d.hall, "timeZone": d.time_zone,
                "prices": d.prices, "version": showtime.version,
                "seats": [{"code": code, "status": s.status, "category": places[code].category,
                           "row": places[code].row, "x": places[code].x} for code, s in seats]}
        return SeatMapView(showtime.version, orjson.dumps(body))

    async def subscribe(self, showtime_id: int, address: str) -> SeatMapSubscription | None:
        raise ConnectionError("the fakes keep no seat-map streams")


class FakeRoomStore(RoomStore):
    """The rooms' configuration and decisions, beside the fake holds (the facts are read from them)."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db
        self.rooms: dict[int, RoomConfig] = {}
        self.leases: dict[int, int] = {}
        self.seeds: dict[int, str] = {}
        self.started: set[int] = set()
        self.quiet_since: dict[int, datetime | None] = {}

    async def configure(self, cmd: ConfigureRoom) -> tuple[RoomConfig, bool] | None:
        if cmd.showtime_id not in self.db.begin()["showtimes"]:
            return None
        mode, was = mode_of(cmd.enabled, cmd.mode), self._on(cmd.showtime_id)
        config = RoomConfig(cmd.showtime_id, enabled_after(mode, was), cmd.active_limit, cmd.opens_at, mode=mode,
                            open_at_arrivals=cmd.open_at_arrivals, open_at_active=cmd.open_at_active)
        return self._change(config, "OPERATOR", changed=config.enabled != was), config.enabled != was

    async def open_automatically(self, showtime_id: int, reason: OpenReason, active_limit: int) -> RoomConfig | None:
        config = self.rooms.get(showtime_id) or RoomConfig(showtime_id, False, active_limit, None, mode="auto")
        if config.mode != "auto" or config.enabled or showtime_id not in self.db.begin()["showtimes"]:
            return None
        return self._change(replace(config, enabled=True), reason)

    async def automatic_rooms(self, limit: int) -> list[RoomConfig]:
        return [c for c in self.rooms.values() if c.mode == "auto" and c.enabled][:limit]

    async def note_quiet(self, showtime_id: int, quiet: bool) -> datetime | None:
        if (config := self.rooms.get(showtime_id)) is None or config.mode != "auto" or not config.enabled:
            return None
        since = self.quiet_since.get(showtime_id) or self.db.clock.now()
        self.quiet_since[showtime_id] = since if quiet else None
        return self.quiet_since[showtime_id]

    async def close_automatically(self, showtime_id: int, after_seconds: float) -> RoomConfig | None:
        config, since = self.rooms.get(showtime_id), self.quiet_since.get(showtime_id)
        if config is None or not config.enabled or config.mode != "auto" or since is None \
                or since > self.db.clock.now() - timedelta(seconds=after_seconds):
            return None
        return self._change(replace(config, enabled=False), "RUSH_OVER")

    async def rooms_on(self) -> int:
        return sum(c.enabled for c in self.rooms.values())

    def _on(self, showtime_id: int) -> bool:
        return (config := self.rooms.get(showtime_id)) is not None and config.enabled

    def _change(self, config: RoomConfig, reason: str, changed: bool = True) -> RoomConfig:
        """Store the room; a change of its state with its event, in one transaction (as the adapter does)."""
        if changed:
            config = replace(config, changed_reason=reason, changed_at=self.db.clock.now())
        tx = self.db.begin()
        if changed:
            tx["outbox"][self.db.next_id()] = waiting_room_changed(config.showtime_id, config.enabled, reason,
                                                                   config.active_limit)
        tx.commit()
        self.rooms[config.showtime_id] = config
        self.quiet_since.pop(config.showtime_id, None)
        return config

    async def config(self, showtime_id: int) -> RoomConfig | None:
        return self.rooms.get(showtime_id)

    async def facts(self, showtime_id: int) -> RoomFacts | None:
        config = self.rooms.get(showtime_id)
        if config is None:
            return None
        tx = self.db.begin()
        seats = [s for (sid, _), s in tx["seats"].items() if sid == showtime_id]
        live = [s for s in seats if s.status == "HELD" and not seat_is_free(s, tx.now)]
        holders = sorted({b.customer_id for b in tx["bookings"].values()
                          if b.showtime_id == showtime_id and as_seen(b, tx.now).status == "HELD"})
        return RoomFacts(config, self.leases.get(showtime_id, 0), self.seeds.get(showtime_id),
                         available=sum(seat_is_free(s, tx.now) for s in seats), held=len(live), holders=holders,
                         started=showtime_id in self.started)

    async def extend_lease(self, showtime_id: int, seconds: float) -> int:
        until = int((self.db.clock.now().timestamp() + seconds) * 1000)
        self.leases[showtime_id] = max(self.leases.get(showtime_id, 0), until)
        return self.leases[showtime_id]

    async def mark_started(self, showtime_id: int) -> None:
        self.started.add(showtime_id)

    async def fix_seed(self, showtime_id: int, seed: str) -> str:
        return self.seeds.setdefault(showtime_id, seed)


class FakeRoomQueue(RoomQueue):
    """The admitted customers' slots only: what holds and cancels touch. The queue itself (joins, polls,
    the steps' shuffle and order) is Lua in Redis and is tested there (tests/integration/test_waiting_room*)."""

    def __init__(self) -> None:
        self.slots: dict[tuple[int, int], int] = {}  # (showtime, customer) -> the end of his slot (epoch ms)
        self.left: list[tuple[int, int]] = []
        self.crowds: dict[int, Crowd] = {}  # showtime -> the crowd arrivals find (a test sets it)
        self.arrived: list[tuple[int, int]] = []
        self.loads: dict[int, RoomFigures] = {}  # showtime -> the figures of its last step (a test sets them)
        self.up = True  # False: Redis unreachable

    def admit(self, admission: AdmissionPass) -> None:
        self.slots[(admission.showtime_id, admission.customer_id)] = admission.slot_ms

    def live(self, admission: AdmissionPass) -> bool:
        return self.slots.get((admission.showtime_id, admission.customer_id)) == admission.slot_ms

    async def join(self, ticket: Ticket, opens_at_ms: int) -> Joined | None:
        raise NotImplementedError("the queue is tested on Redis")

    async def poll(self, ticket: Ticket, opens_at_ms: int) -> QueueView | None:
        raise NotImplementedError("the queue is tested on Redis")

    async def step(self, facts: RoomFacts, slot_seconds: float) -> StepOutcome | str | None:
        figures = self.loads.get(facts.config.showtime_id)
        if figures is None:
            raise NotImplementedError("the queue is tested on Redis")
        return StepOutcome(0, 0, figures.queued, figures.active, 0.0, figures.sold_out)

    async def arrive(self, showtime_id: int, customer_id: int, window_seconds: float) -> Crowd | None:
        """The crowd a test set (`crowds`); the counting itself is Lua, tested on Redis."""
        self.arrived.append((showtime_id, customer_id))
        return self.crowds.get(showtime_id, Crowd(0, 0)) if self.up else None

    async def crowd(self, showtime_id: int, window_seconds: float) -> Crowd | None:
        return self.crowds.get(showtime_id, Crowd(0, 0)) if self.up else None

    async def leave(self, showtime_id: int, customer_id: int) -> None:
        self.slots.pop((showtime_id, customer_id), None)
        self.left.append((showtime_id, customer_id))

    async def figures(self, showtime_id: int) -> RoomFigures | None:
        return self.loads.get(showtime_id) if self.up else None


def _hall_order(code: str) -> tuple[int, str, int]:
    row = code.rstrip("0123456789")
    return len(row), row, int(code[len(row):])


@dataclass
class FakeWorld(MemoryWorld):
    """hold-service's `deps` on the fakes, with what a test arranges (the clock, Redis' gate) and reads (the
    committed holds, seats and events)."""

    deps: Deps
    admission: FakeAdmission

    def events(self, type_: str | None = None) -> list[Any]:
        """Committed outbox events (of one type), in order."""
        return [e for e in self.outbox() if type_ in (None, e.type)]

    def holds(self) -> list[Hold]:
        """Committed holds, status as stored."""
        return self.db.committed("bookings")

    async def seat_map(self, showtime_id: int) -> dict[str, Any]:
        """The public seat map (service_layer.showtimes.seat_map) as its JSON body reads."""
        return dict(orjson.loads((await seat_map(showtime_id, self.deps)).body))

    def seats(self, showtime_id: int) -> dict[str, str]:
        """Committed seat statuses with lazy expiry applied (as a hold request finds them)."""
        now = self.clock.now()
        return {code: "AVAILABLE" if seat_is_free(s, now) else s.status
                for (sid, code), s in self.db.tables["seats"].items() if sid == showtime_id}

    async def showtime(self, rows: dict[str, int] | None = None, price_cents: int = 1200,
                       layout: list[dict[str, Any]] | None = None, prices: Prices | None = None) -> int:
        """A showtime on sale: `rows` at one ADULT price, or the hall's `layout` with its `prices`."""
        showtime_id = len(self.db.tables["showtimes"]) + 1
        async with self.deps.uow() as uow:
            places = layout_hall(layout) if layout is not None else rows_hall(rows or {"F": 10})
            starts_at = self.clock.now() + timedelta(days=1)  # on sale
            details = ShowtimeDetails(showtime_id, "Test", starts_at, prices or {"STANDARD": {"ADULT": price_cents}})
            await uow.holds.add_showtime(details, places)
            await uow.commit()
        return showtime_id


def fake_deps(**settings: Any) -> FakeWorld:
    """Settings as given (no environment, no .env), every port a fake on one clock."""
    config = HoldSettings(_env_file=None, **{"hold_rate_limit_per_minute": 1000, **settings})  # type: ignore[call-arg]
    db = holds_db()
    queue = FakeRoomQueue()
    admission = FakeAdmission(db.clock, config.hold_rate_limit_per_minute,
                              config.hold_rate_limit_per_ip_per_minute, queue)
    deps = Deps(settings=config, uow=lambda: FakeHoldsUnitOfWork(db), statements=lambda: FakeHoldsUnitOfWork(db),
                writer=FakeHoldWriter(db),
                admission=admission, seat_maps=FakeSeatMaps(db), rooms=FakeRoomStore(db), queue=queue,
                credentials=SignedCredentials(config.jwt_secret), now=db.clock.now)
    return FakeWorld(db=db, deps=deps, admission=admission)
