"""DoorRepository on the in-memory schema."""

from __future__ import annotations

import uuid
from datetime import datetime

from hold_service.domain.door import BookingAtDoor
from hold_service.domain.model import Hold
from hold_service.service_layer.door_ports import DoorCounts, DoorRepository
from ticketing_testing.in_memory import MemoryTransaction


class FakeDoorRepository(DoorRepository):
    """sql/door.sql: one admission per booked booking; an offline scan earlier than the recorded one replaces it."""

    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    def _hold(self, booking_id: uuid.UUID) -> Hold | None:
        return next((h for h in self.tx["bookings"].values() if h.booking_id == booking_id), None)

    async def booking(self, booking_id: uuid.UUID) -> BookingAtDoor | None:
        hold = self._hold(booking_id)
        if hold is None:
            return None
        show = self.tx["showtimes"][hold.showtime_id]
        at, door = self.tx["checkins"].get(booking_id, (None, None))
        return BookingAtDoor(hold.booking_id, hold.customer_id, hold.showtime_id, hold.status, tuple(hold.seats),
                             hold.tickets, at, door, show.title, show.starts_at, show.details.duration_minutes,
                             show.status)

    async def admit(self, booking_id: uuid.UUID, at: datetime, door: str, offline: bool) -> bool:
        hold, before = self._hold(booking_id), self.tx["checkins"].get(booking_id)
        if hold is None or hold.status != "BOOKED" or (before is not None and not (offline and before[0] > at)):
            return False
        self.tx["checkins"][booking_id] = (at, door)
        return True

    async def counts(self, showtime_id: int) -> DoorCounts:
        booked = [h for h in self.tx["bookings"].values() if h.showtime_id == showtime_id and h.status == "BOOKED"]
        admitted = [h for h in booked if h.booking_id in self.tx["checkins"]]
        return DoorCounts(len(booked), sum(len(h.seats) for h in booked), len(admitted),
                          sum(len(h.seats) for h in admitted))
