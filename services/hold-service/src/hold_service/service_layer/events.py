"""BookingFailed, HoldExtended, ShowtimeCancelled, TicketCheckedIn and the waiting room's, built from the event
catalogue (shared/src/ticketing/events/).

The seat-map events (SeatsHeld, SeatsReleased, BookingConfirmed, BookingCancelled) carry a seatMapVersion only Postgres
knows at the change, so Postgres builds them (append_seat_map_events, sql/schema.sql), in the same envelope
(ticketing.envelope).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from ticketing.events import booking_event, showtime_event

from hold_service.domain.door import BookingAtDoor
from hold_service.domain.model import Hold

SOURCE = "hold-service"
_BOOKING_FAILED = uuid.UUID("6f1c1f9e-3a57-4c55-9b8e-1d0b2f9a4e03")
_CHECKED_IN = uuid.UUID("2c0d8f4e-5b1a-4f7e-8e21-7a9c3d6b0f15")


def booking_failed(hold: Hold, payment_id: uuid.UUID, reason: str) -> Any:
    """One per payment: its id is derived from the payment, so a PaymentSucceeded applied again (a replay,
    a consumer group reset, a second deployment's group on the same schema) makes the same event, kept once
    by the outbox and applied once by payment-service's inbox: one refund decision per payment."""
    return booking_event("BookingFailed", source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
                         customer_id=hold.customer_id, data={"paymentId": payment_id, "reason": reason},
                         event_id=uuid.uuid5(_BOOKING_FAILED, str(payment_id)))


def showtime_cancelled(showtime_id: int, reason: str) -> Any:
    """An operator cancelled the showtime (keyed by the showtime: it concerns no one booking)."""
    return showtime_event("ShowtimeCancelled", source=SOURCE, showtime_id=showtime_id, data={"reason": reason})


def waiting_room_changed(showtime_id: int, opened: bool, reason: str, active_limit: int) -> Any:
    """WaitingRoomOpened or WaitingRoomClosed (keyed by the showtime), written with the change it reports."""
    return showtime_event("WaitingRoomOpened" if opened else "WaitingRoomClosed", source=SOURCE,
                          showtime_id=showtime_id, data={"reason": reason, "activeLimit": active_limit})


def hold_extended(hold: Hold, expires_at: datetime) -> Any:
    """The hold's new expiry (not a seat-map change: no seatMapVersion, its seats stay HELD)."""
    return booking_event("HoldExtended", source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
                         customer_id=hold.customer_id, data={"holdId": hold.hold_id, "expiresAt": expires_at})


def ticket_checked_in(booking: BookingAtDoor, door: str, at: datetime) -> Any:
    """One per booking: its id is derived from the booking, so the outbox keeps the first admission's only (an
    earlier offline scan synced later corrects hold-service's record, not the event already sent)."""
    return booking_event("TicketCheckedIn", source=SOURCE, booking_id=booking.booking_id,
                         showtime_id=booking.showtime_id, customer_id=booking.customer_id,
                         data={"door": door, "at": at}, event_id=uuid.uuid5(_CHECKED_IN, str(booking.booking_id)))
