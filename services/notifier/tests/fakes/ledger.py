"""PointsLedger: one credit per booking, in memory."""

from __future__ import annotations

import uuid

from notifier.service_layer.ports import (
    PointsLedger,
)


class FakeLedger(PointsLedger):
    def __init__(self) -> None:
        self.points: dict[uuid.UUID, int] = {}

    async def credit(self, booking_id: uuid.UUID, customer_id: int, event_id: uuid.UUID, amount_cents: int,
                     points: int) -> bool:
        if booking_id in self.points:
            return False
        self.points[booking_id] = points
        return True
