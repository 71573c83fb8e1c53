"""What the handlers need from the outside world: abstract ports, and `Deps`, built in bootstrap.py.

Adapters (adapters/) implement these; unit tests subclass them with in-memory fakes.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ticketing.unit_of_work import UnitOfWork

from payment_service.config import Settings
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


@dataclass(frozen=True)
class Pending:
    """A PENDING payment the reconciler looks at."""

    payment: Payment
    past: bool  # its session's time is over (Postgres' clock)
    cancel_requested: bool  # its hold ended


@dataclass(frozen=True)
class Unresolved:
    """Money an operator must look at (the reconciler's report)."""

    refunds_pending: int
    refunds_overdue: int  # due for longer than the bound
    paid_unbooked: int  # paid longer ago than the bound, neither booked nor due back
    oldest_refund_due: datetime | None


class PaymentRepository(abc.ABC):
    @abc.abstractmethod
    async def add(self, p: Payment, idempotency_key: str, max_attempts: int) -> None:
        """A PENDING payment expiring at p.expires_at; nothing when the id exists (a retry), when the hold has
        a live payment, or when it had `max_attempts` payments already."""

    @abc.abstractmethod
    async def get(self, payment_id: uuid.UUID) -> Payment | None: ...

    @abc.abstractmethod
    async def of_hold(self, hold_id: uuid.UUID) -> list[Payment]: ...

    @abc.abstractmethod
    async def lock_pending_of_hold(self, hold_id: uuid.UUID) -> Payment | None: ...

    @abc.abstractmethod
    async def attach_session(self, payment_id: uuid.UUID, session_id: str, url: str) -> bool | None:
        """None when a session was attached before; else whether a cancel was requested meanwhile."""

    @abc.abstractmethod
    async def request_cancel(self, payment_id: uuid.UUID) -> tuple[bool, str | None]:
        """(still PENDING, its session if known)."""

    @abc.abstractmethod
    async def settle(self, payment_id: uuid.UUID, status: str) -> Payment | None:
        """PENDING -> status; the payment if this call changed it."""

    @abc.abstractmethod
    async def paid_after_settlement(self, payment_id: uuid.UUID) -> Payment | None: ...

    @abc.abstractmethod
    async def refund_due(self, payment_id: uuid.UUID, reason: str) -> Payment | None: ...

    @abc.abstractmethod
    async def refund_cancelled(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        """BookingCancelled: a paid payment (booked, or its booking's confirmation not recorded yet) owes its
        whole amount back; the payment the first time, None after (or when it owes nothing)."""

    @abc.abstractmethod
    async def booking_confirmed(self, payment_id: uuid.UUID) -> Payment | None: ...

    @abc.abstractmethod
    async def claim_refunds(self, limit: int, lease_seconds: float) -> list[Payment]: ...

    @abc.abstractmethod
    async def mark_refunded(self, payment_id: uuid.UUID, refund_id: str) -> Payment | None: ...

    @abc.abstractmethod
    async def refund_failed(self, payment_id: uuid.UUID, retry_in: float, error: str) -> None:
        """One more refund attempt failed; the next one after `retry_in` seconds."""

    @abc.abstractmethod
    async def pending_to_reconcile(self, after_seconds: float, limit: int = 500) -> list[Pending]:
        """PENDING payments whose session's time is over, older than `after_seconds`, or whose hold ended."""

    @abc.abstractmethod
    async def unresolved(self, bound_seconds: float) -> Unresolved: ...

    @abc.abstractmethod
    async def purge(self, events_after: float, keys_after: float) -> tuple[str, str]: ...


class IdempotencyRepository(abc.ABC):
    @abc.abstractmethod
    async def get(self, customer_id: int, key: str) -> tuple[str, uuid.UUID] | None:
        """(request hash, payment id) of a claimed key."""

    @abc.abstractmethod
    async def claim(self, customer_id: int, key: str, request_hash: str, payment_id: uuid.UUID) -> bool: ...


class CallbackEventRepository(abc.ABC):
    @abc.abstractmethod
    async def seen(self, event_id: str) -> bool: ...

    @abc.abstractmethod
    async def record(self, event_id: str, event_type: str, session_id: str | None) -> bool:
        """True the first time; a concurrent replay waits on the unique key, then sees the row."""


class PaymentsUnitOfWork(UnitOfWork):
    payments: PaymentRepository
    keys: IdempotencyRepository
    callbacks: CallbackEventRepository

    @abc.abstractmethod
    async def publish(self, event: Any) -> None:
        """An event of the catalogue to the outbox, in this transaction."""


class HoldDirectory(abc.ABC):
    @abc.abstractmethod
    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        """None when hold-service does not know the hold."""

    @abc.abstractmethod
    async def extend(self, hold_id: uuid.UUID, customer_id: int, until: datetime) -> datetime:
        """The hold of `customer_id` lasts at least until `until` (hold-service caps it at its creation +
        HOLD_MAX_SECONDS; idempotent); its expiry. Raises HoldNotActive (not HELD and live), HoldNotFound."""


class Vouchers(abc.ABC):
    @abc.abstractmethod
    async def reserve(self, code: str, *, customer_id: int, order_id: uuid.UUID, order_amount: int) -> int:
        """The discount in cents (idempotent on the order id); raises VoucherRejected or DependencyUnavailable."""

    @abc.abstractmethod
    async def release(self, code: str, order_id: uuid.UUID) -> None:
        """Give the order's use back (idempotent; an unknown order is nothing to do)."""


class Gateway(abc.ABC):
    """The payment provider (adapters/stripe_provider.py: Stripe Checkout). Every call that changes something
    is idempotent on our own ids."""

    @abc.abstractmethod
    async def create_session(self, payment: Payment) -> GatewaySession:
        """The hosted checkout session of this payment; a retry gets the same session."""

    @abc.abstractmethod
    async def get_session(self, session_id: str) -> GatewayState: ...

    @abc.abstractmethod
    async def cancel_session(self, session_id: str) -> GatewayState:
        """End the session now if the customer can still pay it; its state either way."""

    @abc.abstractmethod
    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        """Idempotent on the payment id; returns the refund id."""


@dataclass
class Deps:
    """Everything a handler may use; one per process, built by bootstrap.py."""

    settings: Settings
    uow: Callable[[], PaymentsUnitOfWork]
    # The same repositories with no transaction, each statement committing alone: for the steps that are one
    # statement (a read, the key's claim), where BEGIN and COMMIT would double the round trips.
    statements: Callable[[], PaymentsUnitOfWork]
    holds: HoldDirectory
    vouchers: Vouchers
    gateway: Gateway
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))  # when a checkout's session ends
