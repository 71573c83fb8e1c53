"""IdempotencyRepository on the in-memory schema."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from hold_service.service_layer.ports import (
    IdempotencyRepository,
)
from ticketing_testing.in_memory import MemoryTransaction

from .tables import Key


class FakeIdempotencyRepository(IdempotencyRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def claim(self, customer_id: int, key: str, fingerprint: str) -> dict[str, Any] | None:
        stored = self.tx["keys"].get((customer_id, key))
        if stored is None:
            self.tx["keys"][(customer_id, key)] = Key(fingerprint, self.tx.now)
            return None
        return {"fingerprint": stored.fingerprint, "outcome": stored.outcome}

    async def store(self, customer_id: int, key: str, outcome: dict[str, Any]) -> None:
        stored = self.tx["keys"].get((customer_id, key))
        if stored is not None and stored.outcome is None:
            self.tx["keys"][(customer_id, key)] = replace(stored, outcome=outcome)

    async def purge(self, retention_hours: float) -> None:
        cutoff = self.tx.now - timedelta(hours=retention_hours)
        for k in [k for k, v in self.tx["keys"].items() if v.created_at < cutoff]:
            del self.tx["keys"][k]
