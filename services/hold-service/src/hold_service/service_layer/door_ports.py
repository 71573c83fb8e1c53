"""What the door needs from Postgres (adapters/door.py; tests/fakes/door.py for unit tests)."""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from datetime import datetime

from hold_service.domain.door import BookingAtDoor


@dataclass(frozen=True)
class DoorCounts:
    """A showtime's booked bookings (and their seats) against those admitted at the door."""

    booked: int
    booked_seats: int
    admitted: int
    admitted_seats: int


class DoorRepository(abc.ABC):
    @abc.abstractmethod
    async def booking(self, booking_id: uuid.UUID) -> BookingAtDoor | None:
        """The booking with its showtime, as the door judges it."""

    @abc.abstractmethod
    async def admit(self, booking_id: uuid.UUID, at: datetime, door: str, offline: bool) -> bool:
        """Admit the BOOKED booking at `at` by `door` if it has not been admitted (offline: or admitted later
        than `at`); False when it was refused (then nothing changed)."""

    @abc.abstractmethod
    async def counts(self, showtime_id: int) -> DoorCounts: ...
