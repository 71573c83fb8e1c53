"""The port of a hold request's admission: rate limits, the waiting room's slot, the seat gate (Redis)."""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from hold_service.domain.waiting_room import AdmissionPass

Ended = tuple[int, list[str], uuid.UUID]  # a hold that ended: its showtime, its seats, its id


@dataclass(frozen=True)
class GateSeat:
    """A seat the Redis gate should know is taken: by this hold, until then (None: BOOKED)."""

    code: str
    hold_id: uuid.UUID
    until: datetime | None


@dataclass(frozen=True)
class Admitted:
    """Admission's answer to one hold request."""

    wait: int | None  # seconds to wait: a rate limit (the customer's or the address's) refused it
    taken: list[str]  # the seats the gate knows are taken; [] = go on to Postgres
    slot_ended: bool = False  # the waiting room no longer admits this customer (slot over, token stale)
    # Redis lost this showtime's gate (its mark is gone): a hint to refill it, not part of the answer.
    gate_lost: bool = field(default=False, compare=False)


class Admission(abc.ABC):
    """The rate limits (per customer, per address), the waiting room's slot, then the seat gate (an
    accelerator: it may say 'go on' for anything)."""

    @abc.abstractmethod
    async def admit(self, customer_id: int, showtime_id: int, seats: list[str], hold_id: uuid.UUID,
                    ttl_seconds: float, *, address: str | None = None,
                    slot: AdmissionPass | None = None) -> Admitted:
        """`address` None: no per-address limit; `slot`: the customer's admission while the room is on."""

    @abc.abstractmethod
    async def address_wait(self, address: str, *, anonymous: bool = False) -> int | None:
        """The per-address limit alone (joining a queue): seconds to wait, None = go on (and counted).
        `anonymous`: the stricter limit of joins without a customer's token, counted apart."""

    @abc.abstractmethod
    async def release(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID) -> None:
        """Forget the gate's keys of this hold (Postgres refused it, or it ended)."""

    async def release_holds(self, holds: list[Ended]) -> None:
        """Forget the gate's keys of these ended holds; an adapter may do it in one round trip."""
        for showtime_id, seats, hold_id in holds:
            await self.release(showtime_id, seats, hold_id)

    @abc.abstractmethod
    async def refill(self, showtime_id: int, seats: list[GateSeat], mark_seconds: float) -> int | None:
        """Set the keys of `seats` to their holds (over any other key) and mark the showtime's gate loaded
        for `mark_seconds` (a BOOKED seat's key lasts as long); how many keys were set, None when Redis is
        unavailable."""

    async def note(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        """A hold Postgres chose the seats of (best available) has them: the gate's keys say so, so that the
        gate refuses clicks on them. An accelerator: an adapter without a gate ignores it."""
        return None

    @abc.abstractmethod
    async def keep(self, showtime_id: int, seats: list[str], hold_id: uuid.UUID, until: datetime) -> None:
        """The hold was extended: its keys (only those still its own) last until `until`."""
