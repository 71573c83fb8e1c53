"""The hold rules of sql/schema.sql restated, each once, for the fakes: lazy expiry, a seat being free,
what the per-customer cap counts, a hold as customers see it, the seat-map version and event of each change,
a release. The contract tests (tests/integration/test_contract_*.py) run the fakes and Postgres on the same
cases, so a rule changed in SQL and not here fails them."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from hold_service.domain.model import Hold
from hold_service.service_layer.events import SOURCE
from hold_service.service_layer.ports import (
    Released,
)
from ticketing.events import booking_event
from ticketing_testing.in_memory import MemoryTransaction

from .tables import Seat


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


def seat_map_event(tx: MemoryTransaction, type_: str, hold: Hold, data: dict[str, Any]) -> None:
    """append_seat_map_events, then its numbering (which the database does right after COMMIT): the showtime's
    next version, and its event to the outbox."""
    showtime = tx["showtimes"][hold.showtime_id]
    version = showtime.version + 1
    tx["showtimes"][hold.showtime_id] = replace(showtime, version=version)
    tx["outbox"][tx.db.next_id()] = booking_event(
        type_, source=SOURCE, booking_id=hold.booking_id, showtime_id=hold.showtime_id,
        customer_id=hold.customer_id, data={**data, "seatMapVersion": version})


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
    if freed:
        seat_map_event(tx, "SeatsReleased", hold, {"holdId": hold_id, "seats": freed, "reason": reason})
    return Released(hold_id=hold_id, showtime_id=hold.showtime_id, seats=hold.seats, reason=reason, freed=freed)
