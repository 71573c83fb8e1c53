"""Cancellations: a customer's booking, and an operator's whole showtime. Routes are thin."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field
from ticketing.api.security import Admin, Customer
from ticketing.api.types import StorableText

from hold_service.domain.commands import CancelBooking, CancelShowtime
from hold_service.domain.errors import HoldError
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.errors import api_error
from hold_service.service_layer import cancellations

router = APIRouter(tags=["cancellations"])


class BookingCancelledBody(BaseModel):
    bookingId: uuid.UUID
    status: str = "CANCELLED"


class ShowtimeCancel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: StorableText = Field(min_length=1, max_length=500, description="Why (e.g. projector failure): it is "
                                 "in the customers' e-mails.")


class ShowtimeCancelledBody(BaseModel):
    showtimeId: int
    status: str = "CANCELLED"
    ended: int = Field(description="Holds released and bookings cancelled by this call (0 on a repeat).")


@router.post("/bookings/{booking_id}/cancel", status_code=202, response_model=BookingCancelledBody,
             name="cancel_booking", responses={404: {}, 409: {}})
async def cancel_booking(booking_id: uuid.UUID, who: Customer, deps: DepsDep) -> BookingCancelledBody:
    """The owner cancels a booked booking until CANCELLATION_DEADLINE_MINUTES before the start (then 409
    CANCELLATION_CLOSED): its seats go back on sale and payment-service refunds it in full. Repeating it
    changes nothing; another customer's booking is 404."""
    try:
        await cancellations.cancel_booking(CancelBooking(booking_id, who.customer_id), deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return BookingCancelledBody(bookingId=booking_id)


@router.post("/admin/showtimes/{showtime_id}/cancel", status_code=202, response_model=ShowtimeCancelledBody,
             name="cancel_showtime", responses={404: {}, 422: {}})
async def cancel_showtime(body: ShowtimeCancel, _: Admin, deps: DepsDep,
                          showtime_id: int = Path(ge=1, le=MAX_SHOWTIME_ID)) -> ShowtimeCancelledBody:
    """The showtime is CANCELLED (ShowtimeCancelled): nothing of it is sold again, every live hold is released
    (SeatsReleased SHOWTIME_CANCELLED) and every booking cancelled (BookingCancelled SHOWTIME_CANCELLED: refunded
    in full once, its voucher use released, its customer e-mailed). Idempotent: a repeat finishes what an
    interrupted one left."""
    try:
        ended = await cancellations.cancel_showtime(CancelShowtime(showtime_id, body.reason), deps)
    except HoldError as exc:
        raise api_error(exc) from exc
    return ShowtimeCancelledBody(showtimeId=showtime_id, ended=ended)
