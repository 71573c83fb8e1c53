"""PaymentsUnitOfWork: the repositories on one in-memory transaction (changes and events seen only after
commit)."""

from __future__ import annotations

from typing import Any

from payment_service.service_layer.ports import (
    PaymentsUnitOfWork,
)
from ticketing_testing.in_memory import MemoryTransaction, MemoryUnitOfWork

from .callbacks import FakeCallbackEventRepository
from .keys import FakeIdempotencyRepository
from .payments import FakePaymentRepository


class FakePaymentsUnitOfWork(MemoryUnitOfWork, PaymentsUnitOfWork):
    def bind(self, tx: MemoryTransaction) -> None:
        self.payments = FakePaymentRepository(tx)
        self.keys = FakeIdempotencyRepository(tx)
        self.callbacks = FakeCallbackEventRepository(tx)

    async def publish(self, event: Any) -> None:
        assert self.tx is not None
        self.tx["outbox"][self.db.next_id()] = event  # published (relayed) only once committed
