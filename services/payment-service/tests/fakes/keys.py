"""IdempotencyRepository on the in-memory schema."""

from __future__ import annotations

import uuid

from payment_service.service_layer.ports import (
    IdempotencyRepository,
)
from ticketing_testing.in_memory import MemoryTransaction


class FakeIdempotencyRepository(IdempotencyRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def get(self, customer_id: int, key: str) -> tuple[str, uuid.UUID] | None:
        stored = self.tx["keys"].get((customer_id, key))
        return None if stored is None else (stored[0], stored[1])

    async def claim(self, customer_id: int, key: str, request_hash: str, payment_id: uuid.UUID) -> bool:
        if (customer_id, key) in self.tx["keys"]:
            return False
        self.tx["keys"][(customer_id, key)] = (request_hash, payment_id, self.tx.now)
        return True
