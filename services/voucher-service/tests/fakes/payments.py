"""Payments: payment-service's answer about a payment, in memory (tests/integration/test_payments_port.py
runs it and the HTTP adapter on the same cases)."""

from __future__ import annotations

from voucher_service.domain.errors import PaymentsUnavailable
from voucher_service.service_layer.ports import (
    Payments,
)


class FakePayments(Payments):
    """payment-service in memory: payment id -> status; absent: never recorded; `down`: cannot tell."""

    def __init__(self, statuses: dict[str, str] | None = None, down: bool = False) -> None:
        self.statuses, self.down, self.asked = dict(statuses or {}), down, []  # type: ignore[var-annotated]

    async def status(self, payment_id: str) -> str | None:
        self.asked.append(payment_id)
        if self.down:
            raise PaymentsUnavailable("payment-service is down")
        return self.statuses.get(payment_id)
