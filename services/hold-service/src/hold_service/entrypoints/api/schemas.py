"""Request and response bodies of hold-service's API (camelCase on the wire; docs/api)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from ticketing.api.types import StorableText, UtcDatetime, UtcTimestamp

from hold_service.domain.commands import CreateShowtime
from hold_service.domain.hall import ShowtimeDetails
from hold_service.domain.model import MAX_SHOWTIME_ID, BestSeats, Hold, Ticket

Category = Literal["STANDARD", "VIP", "ACCESSIBLE", "COMPANION"]
TicketType = Literal["ADULT", "CHILD", "SENIOR", "STUDENT"]


class SeatBlock(BaseModel):
    """Seats `from`..`to` of the row, side by side, of one category."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: int = Field(alias="from", ge=1, le=9999)
    to: int = Field(ge=1, le=9999)
    category: Category = "STANDARD"


class Gap(BaseModel):
    """That many empty places in the row's drawing (an aisle, a pillar)."""

    model_config = ConfigDict(extra="forbid")
    gap: int = Field(ge=1, le=100)


class HallRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    row: str = Field(pattern=r"^[A-Z]{1,3}$")
    blocks: list[SeatBlock | Gap] = Field(min_length=1, max_length=50)
    rank: int | None = Field(default=None, ge=1, le=1000, description="The row's place in best available's order "
                             "(1 first); rows without one come after, from the middle of the hall outwards.")


Cents = Annotated[int, Field(ge=0, le=10_000_000)]
CURRENCY = r"^[A-Z]{3}$"  # ISO 4217, upper case


class ShowtimeCreate(BaseModel):
    """Either the hall as it is (`layout` + `prices`) or the old form (`rows` + `priceCents`: every seat
    STANDARD, one ADULT price)."""

    model_config = ConfigDict(extra="forbid")
    showtimeId: int = Field(ge=1, le=MAX_SHOWTIME_ID)
    title: StorableText = Field(min_length=1, max_length=200)
    startsAt: UtcTimestamp
    durationMinutes: int | None = Field(default=None, ge=1, le=1440)
    cinema: StorableText | None = Field(default=None, min_length=1, max_length=200)
    hall: StorableText | None = Field(default=None, min_length=1, max_length=200)
    timeZone: str = Field(default="UTC", max_length=64, description="The cinema's IANA time zone.")
    priceCents: Cents | None = None
    rows: dict[Annotated[str, Field(pattern=r"^[A-Z]{1,3}$")], Annotated[int, Field(ge=1, le=9999)]] | None = Field(
        default=None, min_length=1, max_length=60)
    layout: list[HallRow] | None = Field(default=None, min_length=1, max_length=60)
    prices: dict[Category, dict[TicketType, Cents]] | None = Field(
        default=None, description="Cents by seat category and ticket type; every category used needs ADULT.")
    noLoneSeat: bool = Field(default=False, description="No hold may leave a single free seat between taken seats "
                             "or at a row's end (409 LONE_SEAT with `suggested` seats).")
    currency: str | None = Field(default=None, pattern=CURRENCY, description="The prices' currency, ISO 4217 "
                                 "upper case; absent: the service's CURRENCY.")

    @field_validator("timeZone")
    @classmethod
    def _known_zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError("not a known IANA time zone") from exc
        return zone

    @model_validator(mode="after")
    def _one_form(self) -> ShowtimeCreate:
        old = [v is not None for v in (self.rows, self.priceCents)]
        full = [v is not None for v in (self.layout, self.prices)]
        if not ((all(old) and not any(full)) or (all(full) and not any(old))):
            raise ValueError("give either rows and priceCents, or layout and prices")
        return self

    def command(self) -> CreateShowtime:
        prices = self.prices if self.prices is not None else {"STANDARD": {"ADULT": self.priceCents}}
        details = ShowtimeDetails(showtime_id=self.showtimeId, title=self.title, starts_at=self.startsAt,
                                  prices=prices, duration_minutes=self.durationMinutes,  # type: ignore[arg-type]
                                  cinema=self.cinema, hall=self.hall, time_zone=self.timeZone,
                                  no_lone_seat=self.noLoneSeat, currency=self.currency)
        layout = None if self.layout is None else [r.model_dump(by_alias=True) for r in self.layout]
        return CreateShowtime(details, rows=self.rows, layout=layout)


class ShowtimePublic(BaseModel):
    showtimeId: int
    title: str
    startsAt: datetime
    priceCents: int = Field(description="The lowest price of the showtime.")
    seatCount: int
    prices: dict[str, dict[str, int]]
    currency: str = Field(description="The prices' currency (ISO 4217, upper case).")


# The path and header of POST /showtimes/{id}/holds, described once for its reader and its OpenAPI (hold_request.py).
ShowtimeIdPath = Annotated[int, Field(ge=1, le=MAX_SHOWTIME_ID)]
IdempotencyKeyHeader = Annotated[str, Field(min_length=1, max_length=200)]


class SeatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str
    ticketType: TicketType = "ADULT"


class BestRequest(BaseModel):
    """Best available: the platform chooses `count` seats side by side in one row, best first."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=1, le=64, description="How many seats (1 to the per-hold maximum, 8).")
    category: Category = "STANDARD"
    ticketTypes: list[TicketType] | None = Field(default=None, max_length=64, description="One per seat, in the "
                                                  "row's order; none: every seat ADULT.")
    together: bool = Field(default=True, description="false: the best seats nearest each other, not side by side.")

    def command(self) -> BestSeats:
        return BestSeats(count=self.count, category=self.category, ticket_types=tuple(self.ticketTypes or ()),
                         together=self.together)


# The one description of the body of POST /showtimes/{id}/holds: its OpenAPI is this model's JSON schema, and the
# route's fast reader (hold_request.py) takes its rules from that schema.
class HoldCreate(BaseModel):
    """Either `seats` (picked) or `best` (best available), not both."""

    model_config = ConfigDict(extra="forbid")
    # Count, distinctness and codes are checked by the domain (one place, the contract's 422 body).
    seats: list[str | SeatRequest] | None = Field(default=None, max_length=64, description="Seat codes (ADULT "
                                                   "tickets), or seats with their ticket type.")
    best: BestRequest | None = None

    @model_validator(mode="after")
    def _one_form(self) -> HoldCreate:
        if (self.seats is None) == (self.best is None):
            raise ValueError("give either seats or best")
        return self


class TicketPublic(BaseModel):
    seat: str
    category: Category
    ticketType: TicketType
    priceCents: int

    @classmethod
    def of(cls, ticket: Ticket) -> TicketPublic:
        return cls(seat=ticket.seat, category=ticket.category, ticketType=ticket.ticket_type,  # type: ignore[arg-type]
                   priceCents=ticket.price_cents)


class HoldCreated(BaseModel):
    holdId: uuid.UUID
    bookingId: uuid.UUID
    showtimeId: int
    seats: list[str]
    expiresAt: datetime
    amountCents: int = Field(description="The sum of the tickets' prices, computed from the showtime's prices.")
    tickets: list[TicketPublic] = Field(description="Each seat with its category, ticket type and price (empty "
                                        "for a hold taken before seats had categories).")

    @classmethod
    def of(cls, hold: Hold) -> HoldCreated:
        return cls(holdId=hold.hold_id, bookingId=hold.booking_id, showtimeId=hold.showtime_id,
                   seats=hold.seats, expiresAt=hold.expires_at, amountCents=hold.amount_cents,
                   tickets=[TicketPublic.of(t) for t in hold.tickets])


class HoldPublic(HoldCreated):
    customerId: int
    status: Literal["HELD", "BOOKED", "RELEASED", "EXPIRED", "CANCELLED"]
    createdAt: datetime | None = Field(default=None, description="When the hold was taken: it lasts at most "
                                       "HOLD_MAX_SECONDS from then, extensions included.")

    @classmethod
    def of(cls, hold: Hold) -> HoldPublic:
        return cls(**HoldCreated.of(hold).model_dump(), customerId=hold.customer_id, status=hold.status,
                   createdAt=hold.created_at)


class HoldExtend(BaseModel):
    """payment-service at checkout: keep the hold until `until` (its payment session's end + the grace)."""

    model_config = ConfigDict(extra="forbid")
    until: UtcDatetime
    customerId: int | None = Field(default=None, ge=1, description="The customer checking out: another "
                                   "customer's hold is 404, as for any reader.")


class HoldExtended(BaseModel):
    expiresAt: datetime


class SeatPublic(BaseModel):
    code: str
    status: Literal["AVAILABLE", "HELD", "BOOKED"]
    category: Category
    row: str
    x: int = Field(description="The seat's place in its row's drawing, from 1, counting the gaps.")


class SeatMapPublic(BaseModel):
    showtimeId: int
    title: str
    startsAt: datetime | None
    durationMinutes: int | None
    cinema: str | None
    hall: str | None
    timeZone: str
    prices: dict[Category, dict[TicketType, int]] = Field(description="Cents by seat category and ticket type.")
    currency: str | None = Field(default=None, description="The prices' currency (ISO 4217, upper case); absent only "
                                 "for a showtime of the previous release not yet given the deployment's.")
    version: int
    seats: list[SeatPublic]
