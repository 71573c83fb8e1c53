"""Bodies of the door's endpoints (camelCase on the wire; docs/api)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from ticketing.api.errors import ApiError
from ticketing.api.types import StorableText, UtcDatetime

from hold_service.domain.errors import DoorRefusal
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api.errors import api_error
from hold_service.entrypoints.api.schemas import TicketPublic
from hold_service.service_layer.door import Admitted

Door = StorableText


class CheckinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ticket: str = Field(description="The QR code's text, as scanned.")
    showtimeId: int = Field(ge=1, le=MAX_SHOWTIME_ID, description="The showtime this door is checking in.")
    door: Door = Field(min_length=1, max_length=40, description="The door's name, as staff call it (e.g. A).")


class OfflineScan(CheckinRequest):
    at: UtcDatetime = Field(description="When the scanner saw the ticket (with its offset).")


class CheckinBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scans: list[OfflineScan] = Field(min_length=1, description="At most CHECKIN_BATCH_MAX_SCANS.")


class CheckinAdmitted(BaseModel):
    admitted: Literal[True] = True
    bookingId: uuid.UUID
    seats: list[str]
    tickets: list[TicketPublic]
    title: str
    startsAt: datetime

    @classmethod
    def of(cls, done: Admitted) -> CheckinAdmitted:
        b = done.booking
        return cls(bookingId=b.booking_id, seats=list(b.seats), tickets=[TicketPublic.of(t) for t in b.tickets],
                   title=b.title, startsAt=b.starts_at)


class CheckinRefused(BaseModel):
    """A scan not admitted: the error of POST /checkins, as one result of a batch."""

    model_config = ConfigDict(extra="allow")
    admitted: Literal[False] = False
    error: str = Field(description="ALREADY_CHECKED_IN (with `at` and `door`), TICKET_INVALID, TICKET_REVOKED, "
                       "WRONG_SHOWTIME, TOO_EARLY, CHECKIN_CLOSED or VALIDATION_ERROR.")
    message: str
    at: datetime | None = Field(default=None, description="ALREADY_CHECKED_IN: when the booking was admitted.")
    door: str | None = Field(default=None, description="ALREADY_CHECKED_IN: where.")

    @classmethod
    def of(cls, refused: DoorRefusal) -> CheckinRefused:
        error = api_error(refused)
        return cls(error=error.code, message=error.message, **error.details)


class CheckinResults(BaseModel):
    results: list[CheckinAdmitted | CheckinRefused] = Field(description="One per scan, in the scans' order.")


class PublicKeys(BaseModel):
    kid: str = Field(description="The id of the key tickets are signed with now (a ticket's `k`).")
    publicKey: str = Field(description="That key: base64url of its 32 raw Ed25519 bytes.")
    keys: list[dict[str, str]] = Field(description="Every key a ticket may be signed with (the current one first, "
                                       "then retired ones), as JWKs (kty OKP, crv Ed25519, kid, x).")


class DoorCountsPublic(BaseModel):
    showtimeId: int
    bookings: int = Field(description="Bookings booked for the showtime.")
    seats: int = Field(description="Their seats: the people expected.")
    admittedBookings: int
    admittedSeats: int


def too_many(limit: int) -> ApiError:
    return ApiError(422, "VALIDATION_ERROR", f"a batch carries at most {limit} scans: send the rest in another",
                    problems=[{"loc": ["body", "scans"], "msg": f"List should have at most {limit} items"}])
