"""Admission: the rate limits, the waiting room's slot and the seat gate of Redis, in memory."""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta

from hold_service.domain.waiting_room import (
    AdmissionPass,
)
from hold_service.service_layer.ports import (
    Admission,
    Admitted,
    GateSeat,
)
from ticketing_testing.in_memory import Clock

from .room_queue import FakeRoomQueue

RATE_WINDOW = timedelta(minutes=1)


class FakeAdmission(Admission):
    """The rate limits (a moving window per customer and per address), the waiting room's slot (the fake
    queue's live slots) and the seat gate (keys with a TTL; a mark per showtime whose gate was filled),
    in memory. `forget()` is Redis losing everything: the gate then lets everything through to the writer,
    and says its mark is gone, until it is refilled."""

    def __init__(self, clock: Clock, per_minute: int, per_address_per_minute: int, queue: FakeRoomQueue) -> None:
        self.clock, self.per_minute, self.per_address, self.queue = clock, per_minute, per_address_per_minute, queue
        self._hits: dict[int | str, list[datetime]] = {}
        self._keys: dict[tuple[int, str], tuple[uuid.UUID, datetime]] = {}
        self._marks: dict[int, datetime] = {}  # showtime -> until when its gate is marked filled

    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        waits = [self._count(customer_id, self.per_minute)]
        if address is not None:
            waits.append(self._count(address, self.per_address))
        if any(w is not None for w in waits):
            return Admitted(max(w for w in waits if w is not None), [])
        if slot is not None and not self.queue.live(slot):
            return Admitted(None, [], slot_ended=True)
        now = self.clock.now()
        taken = [s for s in seats if self._owner(showtime_id, s) not in (None, hold_id)]
        if not taken:
            self._keys.update({(showtime_id, s): (hold_id, now + timedelta(seconds=ttl_seconds)) for s in seats})
        return Admitted(None, taken, gate_lost=self._marks.get(showtime_id, now) <= now)

    async def address_wait(self, address: str, *, anonymous: bool = False) -> int | None:
        return self._count(f"anonymous {address}" if anonymous else address, self.per_address)

    def _count(self, who: int | str, per_minute: int) -> int | None:
        """Seconds to wait, or None and this request counted."""
        now = self.clock.now()
        hits = [t for t in self._hits.get(who, []) if t > now - RATE_WINDOW]
        if len(hits) >= per_minute:
            return max(1, math.ceil((hits[-per_minute] + RATE_WINDOW - now).total_seconds()))
        self._hits[who] = [*hits, now]
        return None

    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        for s in seats:
            if self._owner(showtime_id, s) == hold_id:
                del self._keys[(showtime_id, s)]

    async def refill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        now, written = self.clock.now(), 0
        mark = now + timedelta(seconds=mark_seconds)
        for seat in seats:
            self._keys[(showtime_id, seat.code)] = (seat.hold_id, seat.until or mark)
            written += 1
        self._marks[showtime_id] = mark
        return written

    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        for s in seats:
            if self._owner(showtime_id, s) == hold_id:
                self._keys[(showtime_id, s)] = (hold_id, until)

    def knows(self, showtime_id: int, seat: str) -> uuid.UUID | None:
        """The hold the gate says has the seat (None: it lets requests for it through)."""
        return self._owner(showtime_id, seat)

    def _owner(self, showtime_id: int, seat: str) -> uuid.UUID | None:
        key = self._keys.get((showtime_id, seat))
        return None if key is None or key[1] <= self.clock.now() else key[0]

    def forget(self) -> None:
        self._keys.clear()
        self._hits.clear()
        self._marks.clear()
