"""`fake_deps` (the flash path's `Deps` on the fakes, no Postgres), the voucher and the clock they share, `cmd`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from voucher_service.domain.commands import ReserveVoucher
from voucher_service.domain.model import Voucher
from voucher_service.service_layer.ports import (
    Deps,
    VouchersUnitOfWork,
)

from .gate import FakeGate
from .publisher import FakePublisher
from .reservations import NoNormalReservations

NOW = datetime(2030, 1, 1, tzinfo=UTC)
VOUCHER = Voucher("FLASH", 700, 1000, 2, 0, 1, NOW - timedelta(hours=1), NOW + timedelta(hours=1), True)


def fake_deps(gate: FakeGate, publisher: FakePublisher) -> Deps:
    def no_db() -> VouchersUnitOfWork:
        raise AssertionError("flash reserve must not touch Postgres")
    return Deps(uow=no_db, gate=gate, reservations=NoNormalReservations(), publisher=publisher, clock=lambda: NOW)


def cmd(customer: int, order: str) -> ReserveVoucher:
    return ReserveVoucher("FLASH", customer, order, 5000)
