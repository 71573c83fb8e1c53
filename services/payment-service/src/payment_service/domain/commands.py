"""Commands payment-service handles."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class StartCheckout:
    hold_id: uuid.UUID
    customer_id: int
    idempotency_key: str
    voucher_code: str | None


@dataclass(frozen=True)
class GatewayCallback:
    event_id: str
    event_type: str
    session_id: str
    reference: str
