"""What the waiting room's handlers need from the outside world (service_layer/waiting_room.py, room_steps.py):
its configuration and decisions in Postgres, its queue in Redis, and signed credentials. `Deps` carries them
(service_layer/ports.py)."""

from __future__ import annotations

import abc
from datetime import datetime

from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.room_rush import Crowd, OpenReason
from hold_service.domain.waiting_room import (
    AdmissionPass,
    Joined,
    QueueView,
    RoomConfig,
    RoomFacts,
    RoomFigures,
    StepOutcome,
    Ticket,
)


class RoomStore(abc.ABC):
    """The waiting rooms' configuration and decisions, in Postgres (they survive a Redis loss)."""

    @abc.abstractmethod
    async def configure(self, cmd: ConfigureRoom) -> tuple[RoomConfig, bool] | None:
        """The room as configured, and whether that turned it on or off (then with its WaitingRoomOpened or
        WaitingRoomClosed{OPERATOR} in the same transaction). None: no such showtime."""

    @abc.abstractmethod
    async def open_automatically(self, showtime_id: int, reason: OpenReason, active_limit: int) -> RoomConfig | None:
        """An automatic room (or a showtime with none) turns on, with its WaitingRoomOpened in the same
        transaction; once across every process. None: it was on already, forced, or the sale is over."""

    @abc.abstractmethod
    async def automatic_rooms(self, limit: int) -> list[RoomConfig]:
        """The automatic rooms that are on now."""

    @abc.abstractmethod
    async def note_quiet(self, showtime_id: int, quiet: bool) -> datetime | None:
        """Whether the room's rush is over now; since when it has been (None: it is not)."""

    @abc.abstractmethod
    async def close_automatically(self, showtime_id: int, after_seconds: float) -> RoomConfig | None:
        """The automatic room turns off if its rush has been over for `after_seconds`, with its
        WaitingRoomClosed{RUSH_OVER} in the same transaction; once across every process. None: not now."""

    @abc.abstractmethod
    async def rooms_on(self) -> int:
        """How many rooms are on now."""

    @abc.abstractmethod
    async def config(self, showtime_id: int) -> RoomConfig | None:
        """For every request: may be up to WAITING_ROOM_CACHE_SECONDS old. None: the showtime has no room."""

    @abc.abstractmethod
    async def facts(self, showtime_id: int) -> RoomFacts | None:
        """Fresh, for an admission step. None: no room."""

    @abc.abstractmethod
    async def extend_lease(self, showtime_id: int, seconds: float) -> int:
        """Tokens of the room may now last until at least `seconds` from now; the lease (epoch ms)."""

    @abc.abstractmethod
    async def mark_started(self, showtime_id: int) -> None:
        """The room's queue is about to be set up in Redis for the first time."""

    @abc.abstractmethod
    async def fix_seed(self, showtime_id: int, seed: str) -> str:
        """The opening's shuffle seed: `seed` if none was fixed before, else that one."""


class RoomQueue(abc.ABC):
    """Every room's queue, in Redis. Returns None when Redis cannot be reached (the room pauses)."""

    @abc.abstractmethod
    async def join(self, ticket: Ticket, opens_at_ms: int) -> Joined | None:
        """Queue `ticket`, or give back the customer's ticket if he still has a live one."""

    @abc.abstractmethod
    async def poll(self, ticket: Ticket, opens_at_ms: int) -> QueueView | None:
        """Where the ticket stands; a ticket the room lost (Redis lost it) gets its place back."""

    @abc.abstractmethod
    async def claim(self, ticket: Ticket, customer_id: int | None) -> tuple[str, int] | None:
        """A visitor's ticket: ("mine", slot's end ms, 0: over) when `customer_id` owns its place (claimed now,
        if admitted, or before), ("taken", 0) when another customer does, ("none", 0) otherwise (None: look only)."""

    @abc.abstractmethod
    async def step(self, facts: RoomFacts, slot_seconds: float) -> StepOutcome | str | None:
        """One admission step; "need_seed" / "need_lease" when Postgres must decide that first."""

    @abc.abstractmethod
    async def arrive(self, showtime_id: int, customer_id: int, window_seconds: float) -> Crowd | None:
        """Count the customer at the showtime (active for `window_seconds`); its crowd now."""

    @abc.abstractmethod
    async def crowd(self, showtime_id: int, window_seconds: float) -> Crowd | None:
        """The showtime's crowd now, counting nobody."""

    @abc.abstractmethod
    async def leave(self, showtime_id: int, customer_id: int) -> None:
        """The customer's slot is over (he paid or cancelled): someone else may come in."""

    @abc.abstractmethod
    async def figures(self, showtime_id: int) -> RoomFigures | None:
        """None also when no step ran yet."""


class Credentials(abc.ABC):
    """Tickets and admission tokens, signed: customers can neither forge nor guess them."""

    @abc.abstractmethod
    def ticket(self, ticket: Ticket) -> str: ...

    @abc.abstractmethod
    def read_ticket(self, text: str) -> Ticket | None:
        """None: not a ticket of ours."""

    @abc.abstractmethod
    def admission_token(self, admission: AdmissionPass) -> str: ...

    @abc.abstractmethod
    def read_admission_token(self, text: str) -> AdmissionPass | None:
        """None: forged, expired, or not an admission token."""
