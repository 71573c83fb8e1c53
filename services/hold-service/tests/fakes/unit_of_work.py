"""HoldsUnitOfWork: the repositories on one in-memory transaction (changes seen only after commit)."""

from __future__ import annotations

from hold_service.service_layer.ports import (
    HoldsUnitOfWork,
)
from ticketing_testing.in_memory import MemoryTransaction, MemoryUnitOfWork

from .door import FakeDoorRepository
from .holds import FakeHoldRepository
from .keys import FakeIdempotencyRepository


class FakeHoldsUnitOfWork(MemoryUnitOfWork, HoldsUnitOfWork):
    def bind(self, tx: MemoryTransaction) -> None:
        self.holds, self.keys, self.door = FakeHoldRepository(tx), FakeIdempotencyRepository(tx), FakeDoorRepository(tx)
