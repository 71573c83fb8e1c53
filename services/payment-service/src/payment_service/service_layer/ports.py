"""What the handlers need from the outside world; adapters implement these, tests subclass them."""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from datetime import datetime

from payment_service.domain.model import Hold, Payment


@dataclass(frozen=True)
class GatewaySession:
    session_id: str
    url: str


@dataclass(frozen=True)
class GatewayState:
    session_id: str
    status: str  # open | paid | failed | expired
    amount_cents: int


class HoldDirectory(abc.ABC):
    @abc.abstractmethod
    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        """None when hold-service does not know the hold."""


class Vouchers(abc.ABC):
    @abc.abstractmethod
    async def reserve(self, code: str, *, customer_id: int, order_id: uuid.UUID, order_amount: int) -> int:
        """The discount in cents; raises VoucherRejected or DependencyUnavailable."""


class Gateway(abc.ABC):
    @abc.abstractmethod
    async def create_session(self, payment: Payment, callback_url: str,
                             expires_at: datetime) -> GatewaySession:
        """Idempotent on the payment id (the gateway reference)."""

    @abc.abstractmethod
    async def get_session(self, session_id: str) -> GatewayState: ...

    @abc.abstractmethod
    async def cancel_session(self, session_id: str) -> GatewayState: ...

    @abc.abstractmethod
    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        """Idempotent on the payment id; returns the refund id."""
