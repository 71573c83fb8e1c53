"""BookingFailed, built from the event catalogue (shared/src/ticketing/events.py).

The seat-map events (SeatsHeld, SeatsReleased, BookingConfirmed) carry a seatMapVersion only Postgres
knows at the change, so Postgres builds them (migration 0004, append_seat_map_events).
"""

from __future__ import annotations

import uuid
from typing import Any

from ticketing.events import booking_event

from hold_service.domain.model import Hold

SOURCE = "hold-service"


def booking_failed(hold: Hold, payment_id: uuid.UUID, reason: str) -> Any:
    return booking_event("BookingFailed", source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
                         customer_id=hold.customer_id, data={"paymentId": payment_id, "reason": reason})
