"""Bodies of what's on (GET /showtimes) and my bookings (GET /bookings), camelCase on the wire (docs/api)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from hold_service.domain.catalogue import BookingView
from hold_service.entrypoints.api.schemas import TicketPublic

CURRENCY = ("The currency of the amounts (ISO 4217, upper case); null only for a showtime of the previous release "
            "not yet given the deployment's CURRENCY.")


class ShowtimeListed(BaseModel):
    showtimeId: int
    title: str
    startsAt: datetime
    durationMinutes: int | None
    cinema: str | None
    hall: str | None
    timeZone: str = Field(description="The cinema's IANA time zone, to show the start as the cinema's clock does.")
    status: Literal["ON_SALE", "SOLD_OUT", "CLOSED", "CANCELLED"]
    seatsAvailable: int
    fromPriceCents: int = Field(description="The showtime's lowest price.")
    currency: str | None = Field(default=None, description=CURRENCY)
    waitingRoom: bool = Field(description="Customers queue before they choose seats.")


class ShowtimeList(BaseModel):
    showtimes: list[ShowtimeListed]
    next: str | None = Field(default=None, description="When more showtimes start in the window than one answer "
                             "lists (CATALOGUE_PAGE_SIZE): the address of the next page, else null.")


class BookingPublic(BaseModel):
    bookingId: uuid.UUID
    holdId: uuid.UUID
    showtimeId: int
    title: str
    startsAt: datetime
    cinema: str | None
    hall: str | None
    timeZone: str
    seats: list[str]
    tickets: list[TicketPublic]
    status: Literal["HELD", "BOOKED", "CANCELLED", "RELEASED", "EXPIRED"]
    amountCents: int
    currency: str | None = Field(default=None, description=CURRENCY)
    checkedInAt: datetime | None = Field(default=None, description="When its group was admitted at the door.")
    ticket: str | None = Field(description="A BOOKED booking's signed QR text (the one its e-mail's QR code "
                               "holds); null otherwise.")

    @classmethod
    def of(cls, view: BookingView, ticket: str | None) -> BookingPublic:
        hold = view.hold
        return cls(bookingId=hold.booking_id, holdId=hold.hold_id, showtimeId=hold.showtime_id, title=view.title,
                   startsAt=view.starts_at, cinema=view.cinema, hall=view.hall, timeZone=view.time_zone,
                   seats=hold.seats, tickets=[TicketPublic.of(t) for t in hold.tickets], status=hold.status,
                   amountCents=hold.amount_cents, currency=view.currency, checkedInAt=view.checked_in_at, ticket=ticket)


class BookingList(BaseModel):
    bookings: list[BookingPublic]
