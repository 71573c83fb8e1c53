"""Vouchers: voucher-service's uses per orderId, in memory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from payment_service.domain.errors import (
    DependencyUnavailable,
    VoucherRejected,
)
from payment_service.service_layer.ports import (
    Vouchers,
)


@dataclass
class Voucher:
    discount: int
    limit: int
    uses: dict[uuid.UUID, int] = field(default_factory=dict)  # order id -> customer: reserved, not released


class FakeVouchers(Vouchers):
    """voucher-service's reservations: a use per orderId (a retry reserves nothing more), at most `limit`."""

    def __init__(self) -> None:
        self.vouchers: dict[str, Voucher] = {}
        self.released: list[uuid.UUID] = []
        self.down = False

    def add(self, code: str, discount: int = 500, limit: int = 1_000_000) -> None:
        self.vouchers[code] = Voucher(discount, limit)

    @property
    def reserved(self) -> dict[uuid.UUID, str]:
        """order id -> code of every use held now."""
        return {order: code for code, v in self.vouchers.items() for order in v.uses}

    async def reserve(self, code: str, *, customer_id: int, order_id: uuid.UUID, order_amount: int) -> int:
        voucher = self._voucher(code)
        if order_id not in voucher.uses:
            if len(voucher.uses) >= voucher.limit:
                raise VoucherRejected(409, "OUT_OF_STOCK", "no uses left")
            voucher.uses[order_id] = customer_id
        return voucher.discount

    async def release(self, code: str, order_id: uuid.UUID) -> None:
        self._reachable()
        voucher = self.vouchers.get(code)  # an unknown voucher or order: nothing to give back
        if voucher is not None and voucher.uses.pop(order_id, None) is not None:
            self.released.append(order_id)

    def _voucher(self, code: str) -> Voucher:
        self._reachable()
        if code not in self.vouchers:
            raise VoucherRejected(404, "NOT_FOUND", "no such voucher")
        return self.vouchers[code]

    def _reachable(self) -> None:
        if self.down:
            raise DependencyUnavailable("voucher-service: ConnectError")
