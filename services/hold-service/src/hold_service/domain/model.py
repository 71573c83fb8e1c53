"""Holds: what a valid request is and what a hold looks like. Pure, no I/O."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from hold_service.domain.errors import (
    InvalidSeats,
    LoneSeat,
    SeatsUnavailable,
    ShowtimeClosed,
    ShowtimeNotFound,
    UnpricedTickets,
)

HoldStatus = Literal["HELD", "BOOKED", "RELEASED", "EXPIRED", "CANCELLED"]
SEAT_CODE = re.compile(r"^[A-Z]{1,3}[1-9][0-9]{0,3}$")
ROW_NAME = re.compile(r"^[A-Z]{1,3}$")
MAX_SEATS_PER_ROW, MAX_SEATS_PER_SHOWTIME = 9999, 5000
MAX_SHOWTIME_ID = 2**53  # exact in JSON numbers everywhere (JavaScript clients included)
TICKET_TYPES = ("ADULT", "CHILD", "SENIOR", "STUDENT")
DEFAULT_TICKET_TYPE = "ADULT"


@dataclass(frozen=True)
class Ticket:
    """One seat of a hold and what it costs: the showtime's price of the seat's category for its ticket type
    (Postgres computes it; a client never says what a seat costs)."""

    seat: str
    category: str
    ticket_type: str
    price_cents: int

    def record(self) -> dict[str, Any]:
        return {"seat": self.seat, "category": self.category, "ticketType": self.ticket_type,
                "priceCents": self.price_cents}

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> Ticket:
        return cls(seat=r["seat"], category=r["category"], ticket_type=r["ticketType"],
                   price_cents=int(r["priceCents"]))


def requested_seats(seats: list[str], max_seats: int) -> list[str]:
    """1..max distinct well-formed codes, sorted: every path locks seats in this order (no deadlock)."""
    if not 1 <= len(seats) <= max_seats:
        raise InvalidSeats(f"a hold takes 1 to {max_seats} seats")
    if len(set(seats)) != len(seats):
        raise InvalidSeats("seats must be distinct", sorted({s for s in seats if seats.count(s) > 1}))
    bad = [s for s in seats if not SEAT_CODE.match(s)]
    if bad:
        raise InvalidSeats("unknown seat codes", bad)
    return sorted(seats)


def requested_ticket_types(seats: list[str], asked: Mapping[str, str]) -> tuple[str, ...]:
    """The ticket type of each of `seats` (sorted), ADULT unless asked otherwise; an unknown type is a 422."""
    if bad := sorted(s for s, t in asked.items() if t not in TICKET_TYPES):
        raise InvalidSeats(f"ticket types are {', '.join(TICKET_TYPES)}", bad)
    return tuple(asked.get(s, DEFAULT_TICKET_TYPE) for s in seats)


@dataclass(frozen=True)
class BestSeats:
    """Best available: `count` seats of `category` chosen by the platform, side by side in one row (or, not
    `together`, the best ones nearest each other); `ticket_types` one per seat in seat order (empty: ADULT)."""

    count: int
    category: str = "STANDARD"
    ticket_types: tuple[str, ...] = ()
    together: bool = True

    def fingerprint(self) -> str:
        return f"best:{self.count}:{self.category}:{'/'.join(self.ticket_types)}:{self.together}"


def requested_best(best: BestSeats, max_seats: int) -> BestSeats:
    """A valid best-available request (1..max seats, one known ticket type per seat if any), else a 422."""
    if not 1 <= best.count <= max_seats:
        raise InvalidSeats(f"a hold takes 1 to {max_seats} seats")
    if best.ticket_types and len(best.ticket_types) != best.count:
        raise InvalidSeats("give one ticket type per seat, or none (ADULT)")
    if bad := sorted({t for t in best.ticket_types if t not in TICKET_TYPES}):
        raise InvalidSeats(f"ticket types are {', '.join(TICKET_TYPES)}", bad)
    return best


@dataclass(frozen=True)
class HoldSeats:
    """Command: a customer asks for seats of a showtime."""

    showtime_id: int
    customer_id: int
    seats: list[str]
    idempotency_key: str | None = None
    hold_id: uuid.UUID = field(default_factory=uuid.uuid4)
    booking_id: uuid.UUID = field(default_factory=uuid.uuid4)
    address: str | None = None  # the client's address, for the per-address rate limit (None: not limited)
    admission_token: str | None = None  # X-Admission-Token: needed while the showtime's waiting room is on
    ticket_types: Mapping[str, str] = field(default_factory=dict)  # seat -> ticket type; absent: ADULT
    best: BestSeats | None = None  # best available: the platform chooses the seats (`seats` is then [])

    def fingerprint(self) -> str:
        """What makes two requests under one Idempotency-Key the same request."""
        if self.best is not None:
            return f"{self.showtime_id}:{self.best.fingerprint()}"
        def seat(code: str) -> str:
            kind = self.ticket_types.get(code, DEFAULT_TICKET_TYPE)
            return code if kind == DEFAULT_TICKET_TYPE else f"{code}/{kind}"
        return f"{self.showtime_id}:{','.join(seat(s) for s in sorted(self.seats))}"

    def keyed(self) -> HoldSeats:
        """The ids of a keyed request follow from (customer, key): every retry asks for the same hold,
        which Postgres then answers instead of writing a second one."""
        name = f"{self.customer_id}:{self.idempotency_key}"
        return replace(self, hold_id=uuid.uuid5(_KEYED_HOLDS, name), booking_id=uuid.uuid5(_KEYED_BOOKINGS, name))


_KEYED_HOLDS = uuid.UUID("6f1c1f9e-3a57-4c55-9b8e-1d0b2f9a4e01")
_KEYED_BOOKINGS = uuid.UUID("6f1c1f9e-3a57-4c55-9b8e-1d0b2f9a4e02")


@dataclass(frozen=True)
class TakeSeats:
    """One hold for the writer: Postgres decides it and writes it with its events, or writes nothing."""

    showtime_id: int
    seats: list[str]  # sorted, distinct
    hold_id: uuid.UUID
    customer_id: int
    ttl_seconds: float
    booking_id: uuid.UUID
    cap: int  # seats the customer may hold at once on the showtime, checked at COMMIT
    ticket_types: tuple[str, ...] = ()  # one per seat, in `seats` order; empty: all ADULT
    close_minutes: float = 0  # sales close this long before the start (SALES_CLOSE_MINUTES_BEFORE_START)

    def types(self) -> list[str]:
        return list(self.ticket_types) or [DEFAULT_TICKET_TYPE] * len(self.seats)


@dataclass(frozen=True)
class Verdict:
    """What Postgres saw and did for a TakeSeats; `expires_at` is set when the hold is this request's."""

    amount_cents: int | None  # the price of the requested seats, as Postgres computes it; None: no such showtime
    found: frozenset[str]  # requested seats that exist
    taken: list[str]  # requested seats another hold has or booked
    expires_at: datetime | None
    earlier: bool = False  # a hold with this id was written before (a retry under one Idempotency-Key)
    tickets: tuple[Ticket, ...] = ()  # the seats with their prices, as Postgres computed them
    unpriced: tuple[str, ...] = ()  # requested seats whose category has no price for their ticket type
    closed: bool = False  # the showtime sells nothing now (cancelled, or its sales closed)
    lone: tuple[str, ...] = ()  # under the no-lone-seat rule: the free seats this hold would strand
    suggested: tuple[str, ...] = ()  # then: seats that strand nobody

    def hold(self, request: TakeSeats) -> Hold:
        """The hold, or the refusal that says why nothing was written (the cap refuses at COMMIT)."""
        if self.amount_cents is None:
            raise ShowtimeNotFound(f"showtime {request.showtime_id}")
        if self.closed:
            raise ShowtimeClosed("sales of this showtime are closed")
        if unknown := [s for s in request.seats if s not in self.found]:
            raise InvalidSeats("unknown seat codes", unknown)
        if self.unpriced:
            raise UnpricedTickets("the showtime has no price for these seats' category and ticket type",
                                  list(self.unpriced))
        if self.taken:
            raise SeatsUnavailable(self.taken)
        if self.lone:
            raise LoneSeat(list(self.lone), list(self.suggested))
        if self.expires_at is None:
            raise SeatsUnavailable(request.seats)
        return Hold(hold_id=request.hold_id, booking_id=request.booking_id, customer_id=request.customer_id,
                    showtime_id=request.showtime_id, seats=request.seats, status="HELD",
                    expires_at=self.expires_at, amount_cents=self.amount_cents, tickets=self.tickets)


@dataclass(frozen=True)
class Hold:
    hold_id: uuid.UUID
    booking_id: uuid.UUID
    customer_id: int
    showtime_id: int
    seats: list[str]
    status: HoldStatus
    expires_at: datetime
    amount_cents: int
    payment_id: uuid.UUID | None = None
    created_at: datetime | None = None  # when it was taken: it lasts at most HOLD_MAX_SECONDS from then
    tickets: tuple[Ticket, ...] = ()  # each seat's category, ticket type and price (amount_cents is their sum)

    def visible_to(self, customer_id: int | None) -> bool:
        """None = a service principal; a customer sees only his own holds (others get 404)."""
        return customer_id is None or customer_id == self.customer_id

    def record(self) -> dict[str, Any]:
        """As an Idempotency-Key's stored outcome."""
        return {"holdId": str(self.hold_id), "bookingId": str(self.booking_id), "customerId": self.customer_id,
                "showtimeId": self.showtime_id, "seats": self.seats, "expiresAt": self.expires_at.isoformat(),
                "amountCents": self.amount_cents, "tickets": [t.record() for t in self.tickets]}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Hold:
        return cls(hold_id=uuid.UUID(r["holdId"]), booking_id=uuid.UUID(r["bookingId"]),
                   customer_id=int(r["customerId"]), showtime_id=int(r["showtimeId"]), seats=list(r["seats"]),
                   status="HELD", expires_at=datetime.fromisoformat(r["expiresAt"]),
                   amount_cents=int(r["amountCents"]),
                   tickets=tuple(Ticket.from_record(t) for t in r.get("tickets", ())))


Outcome = Hold | SeatsUnavailable  # the definitive answers an Idempotency-Key replays


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    if isinstance(outcome, Hold):
        return {"hold": outcome.record()}
    return {"unavailable": outcome.seats, "decidedBy": outcome.decided_by, "together": outcome.together}


def outcome_from(record: dict[str, Any]) -> Outcome:
    if "hold" in record:
        return Hold.from_record(record["hold"])
    return SeatsUnavailable(list(record["unavailable"]), record.get("decidedBy", "postgres"), record.get("together"))
