"""CallbackEventRepository on the in-memory schema."""

from __future__ import annotations

from payment_service.service_layer.ports import (
    CallbackEventRepository,
)
from ticketing_testing.in_memory import MemoryTransaction


class FakeCallbackEventRepository(CallbackEventRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def seen(self, event_id: str) -> bool:
        return event_id in self.tx["callbacks"]

    async def record(self, event_id: str, event_type: str, session_id: str | None) -> bool:
        if event_id in self.tx["callbacks"]:
            return False
        self.tx["callbacks"][event_id] = (event_type, session_id, self.tx.now)
        return True
