"""RoomQueue: the admitted customers' slots only (the queue itself is Lua, tested on Redis)."""

from __future__ import annotations

from hold_service.domain.room_rush import Crowd
from hold_service.domain.waiting_room import (
    AdmissionPass,
    Joined,
    QueueView,
    RoomFacts,
    RoomFigures,
    StepOutcome,
    Ticket,
)
from hold_service.service_layer.room_ports import RoomQueue


class FakeRoomQueue(RoomQueue):
    """The admitted customers' slots only: what holds and cancels touch. The queue itself (joins, polls,
    the steps' shuffle and order) is Lua in Redis and is tested there (tests/integration/test_waiting_room*)."""

    def __init__(self) -> None:
        self.slots: dict[tuple[int, int], int] = {}  # (showtime, customer) -> the end of his slot (epoch ms)
        self.left: list[tuple[int, int]] = []
        self.crowds: dict[int, Crowd] = {}  # showtime -> the crowd arrivals find (a test sets it)
        self.arrived: list[tuple[int, int]] = []
        self.loads: dict[int, RoomFigures] = {}  # showtime -> the figures of its last step (a test sets them)
        self.up = True  # False: Redis unreachable

    def admit(self, admission: AdmissionPass) -> None:
        self.slots[(admission.showtime_id, admission.customer_id)] = admission.slot_ms

    def live(self, admission: AdmissionPass) -> bool:
        return self.slots.get((admission.showtime_id, admission.customer_id)) == admission.slot_ms

    async def join(self, ticket: Ticket, opens_at_ms: int) -> Joined | None:
        raise NotImplementedError("the queue is tested on Redis")

    async def poll(self, ticket: Ticket, opens_at_ms: int) -> QueueView | None:
        raise NotImplementedError("the queue is tested on Redis")

    async def claim(self, ticket: Ticket, customer_id: int | None) -> tuple[str, int] | None:
        raise NotImplementedError("the queue is tested on Redis")

    async def step(self, facts: RoomFacts, slot_seconds: float) -> StepOutcome | str | None:
        figures = self.loads.get(facts.config.showtime_id)
        if figures is None:
            raise NotImplementedError("the queue is tested on Redis")
        return StepOutcome(0, 0, figures.queued, figures.active, 0.0, figures.sold_out)

    async def arrive(self, showtime_id: int, customer_id: int, window_seconds: float) -> Crowd | None:
        """The crowd a test set (`crowds`); the counting itself is Lua, tested on Redis."""
        self.arrived.append((showtime_id, customer_id))
        return self.crowds.get(showtime_id, Crowd(0, 0)) if self.up else None

    async def crowd(self, showtime_id: int, window_seconds: float) -> Crowd | None:
        return self.crowds.get(showtime_id, Crowd(0, 0)) if self.up else None

    async def leave(self, showtime_id: int, customer_id: int) -> None:
        self.slots.pop((showtime_id, customer_id), None)
        self.left.append((showtime_id, customer_id))

    async def figures(self, showtime_id: int) -> RoomFigures | None:
        return self.loads.get(showtime_id) if self.up else None
