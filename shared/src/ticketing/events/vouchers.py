"""voucher-service's event on its own topic: one use of a flash-sale voucher reserved (voucher-reserved)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from ticketing.envelope import Model
from ticketing.events.fields import utcnow


class VoucherReserved(Model):
    """voucher-service, flash mode: one use of a voucher reserved for an order (voucher-reserved, key code)."""

    eventId: uuid.UUID
    type: Literal["VoucherReserved"] = "VoucherReserved"
    code: str
    customerId: int
    orderId: str
    orderAmount: int
    occurredAt: datetime

    @classmethod
    def new(cls, *, code: str, customer_id: int, order_id: str, order_amount: int) -> VoucherReserved:
        return cls(eventId=uuid.uuid4(), code=code, customerId=customer_id, orderId=order_id,
                   orderAmount=order_amount, occurredAt=utcnow())


def decode_voucher_reserved(value: bytes) -> VoucherReserved:
    return VoucherReserved.model_validate_json(value, extra="ignore")  # a newer producer's fields: ignored
