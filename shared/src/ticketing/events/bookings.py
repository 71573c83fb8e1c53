"""hold-service's events of a booking: confirmed with its tickets, failed though paid, its ticket checked in."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from ticketing.envelope import BookingEnvelope, Model
from ticketing.events.fields import SEAT_MAP_VERSION, currency, optional


class Ticket(Model):
    """One seat of a booking as it was sold."""

    seat: str = Field(description="The seat code (row + number, e.g. F5).")
    category: str = Field(description="The seat's category: STANDARD, VIP, ACCESSIBLE or COMPANION.")
    ticketType: str = Field(description="ADULT, CHILD, SENIOR or STUDENT.")
    priceCents: int = Field(description="The showtime's price of this category and ticket type.")


class BookingConfirmedData(Model):
    """The hold's seats are BOOKED for this payment (until a cancellation: BookingCancelled)."""

    holdId: uuid.UUID
    seats: list[str]
    amountCents: int = Field(description="What the customer paid, after the voucher discount.")
    discountCents: int = Field(description="The voucher discount (0 without one): the price was amountCents + "
                                           "discountCents.")
    paymentId: uuid.UUID
    seatMapVersion: int = Field(description=SEAT_MAP_VERSION)
    title: str | None = optional("The film (optional: absent from older producers).")
    cinema: str | None = optional("The cinema's name (optional).")
    hall: str | None = optional("The hall's name (optional).")
    startsAt: datetime | None = optional("When the showtime starts, UTC (optional).")
    timeZone: str | None = optional("The cinema's IANA time zone, e.g. Europe/Lisbon (optional): local times "
                                    "are shown in it.")
    tickets: list[Ticket] | None = optional("Each seat with its category, ticket type and price, in seat order "
                                            "(optional).")
    currency: str | None = currency()


class BookingFailedData(Model):
    """The customer paid but the hold could not be booked; the payment is refunded (RefundIssued)."""

    paymentId: uuid.UUID
    reason: Literal["HOLD_EXPIRED", "HOLD_RELEASED"]


class TicketCheckedInData(Model):
    """The booking's ticket admitted its group at a door: once per booking, the first admission hold-service
    recorded (an offline scan made earlier and synced later moves the booking's checkedInAt, not this event)."""

    door: str
    at: datetime = Field(description="When the ticket was scanned (offline scans: when the scanner saw it).")


class BookingConfirmed(BookingEnvelope):
    """hold-service: the booking is confirmed (seats BOOKED)."""

    type: Literal["BookingConfirmed"] = "BookingConfirmed"
    data: BookingConfirmedData


class BookingFailed(BookingEnvelope):
    """hold-service: a paid booking could not be honoured."""

    type: Literal["BookingFailed"] = "BookingFailed"
    data: BookingFailedData


class TicketCheckedIn(BookingEnvelope):
    """hold-service: the booking's ticket admitted its group at a door."""

    type: Literal["TicketCheckedIn"] = "TicketCheckedIn"
    data: TicketCheckedInData
