"""NormalReservations for flash-only tests: a normal-mode reservation is a bug there."""

from __future__ import annotations

from voucher_service.domain.model import NormalAttempt
from voucher_service.service_layer.ports import (
    NormalReservations,
)


class NoNormalReservations(NormalReservations):
    """Flash vouchers only: a normal-mode reservation here is a bug of the test or of the handler."""

    async def reserve(self, code: str, customer_id: int, order_id: str, amount: int) -> NormalAttempt:
        raise AssertionError("flash reserve must not take a normal-mode use")
