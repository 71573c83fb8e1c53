"""`fake_deps`: payment-service's `Deps` on the fakes, and the `FakeWorld` a test arranges and reads."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from payment_service.config import Settings
from payment_service.service_layer.ports import (
    Deps,
)
from ticketing_testing.in_memory import MemoryWorld

from .gateway import FakeGateway
from .holds import FakeHoldDirectory
from .tables import Row, payments_db
from .unit_of_work import FakePaymentsUnitOfWork
from .vouchers import FakeVouchers


@dataclass
class FakeWorld(MemoryWorld):
    """payment-service's `deps` on the fakes, with the other parties a test arranges (hold-service, the
    vouchers, the gateway, the clock) and what it reads (committed payment rows and events)."""

    deps: Deps
    holds: FakeHoldDirectory
    vouchers: FakeVouchers
    gateway: FakeGateway

    def events(self, payment_id: uuid.UUID | None = None) -> list[Any]:
        """Committed outbox events (of one payment), in order."""
        return [e for e in self.outbox() if payment_id in (None, e.data.paymentId)]

    def row(self, payment_id: uuid.UUID) -> Row:
        """The committed row of a payment."""
        row: Row = self.db.tables["payments"][payment_id]
        return row


def fake_deps(**settings: Any) -> FakeWorld:
    """Settings as given (no environment, no .env), every port a fake on one clock."""
    db = payments_db()
    holds, vouchers, gateway = FakeHoldDirectory(db.clock.now), FakeVouchers(), FakeGateway(db.clock)
    config = Settings(_env_file=None, **settings)  # type: ignore[call-arg]
    holds.hold_max = config.hold_max_seconds
    deps = Deps(settings=config, uow=lambda: FakePaymentsUnitOfWork(db), statements=lambda: FakePaymentsUnitOfWork(db),
                holds=holds, vouchers=vouchers,
                gateway=gateway, clock=db.clock.now)
    return FakeWorld(deps=deps, db=db, holds=holds, vouchers=vouchers, gateway=gateway)
