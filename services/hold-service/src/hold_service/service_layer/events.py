"""Building the contract's events from a hold (DESIGN.md section 4, keyed by bookingId)."""

from __future__ import annotations

import uuid
from typing import Any

from ticketing.events import booking_event

from hold_service.domain.model import Hold

SOURCE = "hold-service"


def _event(type_: str, hold: Hold, data: dict[str, Any]) -> Any:
    return booking_event(type_, source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
                         customer_id=hold.customer_id, data=data)


def seats_held(hold: Hold, version: int) -> Any:
    return _event("SeatsHeld", hold, {"holdId": hold.hold_id, "seats": hold.seats,
                                      "expiresAt": hold.expires_at, "amountCents": hold.amount_cents,
                                      "seatMapVersion": version})


def seats_released(hold: Hold, reason: str, version: int) -> Any:
    return _event("SeatsReleased", hold, {"holdId": hold.hold_id, "seats": hold.seats, "reason": reason,
                                          "seatMapVersion": version})


def booking_confirmed(hold: Hold, payment_id: uuid.UUID, version: int) -> Any:
    return _event("BookingConfirmed", hold, {"holdId": hold.hold_id, "seats": hold.seats,
                                             "amountCents": hold.amount_cents, "paymentId": payment_id,
                                             "seatMapVersion": version})


def booking_failed(hold: Hold, payment_id: uuid.UUID, reason: str) -> Any:
    return _event("BookingFailed", hold, {"paymentId": payment_id, "reason": reason})
