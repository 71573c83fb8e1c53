"""Gateway: Checkout Sessions as the payment provider (and the simulator) keeps them, in memory."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

from payment_service.domain.errors import (
    DependencyUnavailable,
    GatewayRejected,
)
from payment_service.domain.model import Payment
from payment_service.service_layer.ports import (
    Gateway,
    GatewaySession,
    GatewayState,
)
from ticketing_testing.in_memory import Clock


@dataclass
class Session:
    reference: str
    amount_cents: int
    expires_at: datetime
    status: str = "open"
    refunds: dict[str, str] = field(default_factory=dict)  # idempotency key -> refund id


class FakeGateway(Gateway):
    """The payment provider as Stripe keeps Checkout Sessions: open until paid or expired by us (Stripe's own
    expiry, 30 minutes at the least, is later than any of ours). Switches: `down` (every call fails: 503),
    `failing` (the names of calls that fail that way), `refusing` (the names of calls it refuses: 409),
    `forget()` (a restarted gateway: unknown sessions), `during_create` (runs while a session is being
    created, between the gateway and our database)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.down = False
        self.failing: set[str] = set()
        self.refusing: set[str] = set()
        self.during_create: Callable[[], Awaitable[None]] | None = None
        self._ids = itertools.count(1)

    async def create_session(self, payment: Payment) -> GatewaySession:
        self._call("create_session")
        reference = str(payment.payment_id)
        session_id = next((sid for sid, s in self.sessions.items() if s.reference == reference), None)
        if session_id is None:
            session_id = f"cs_{next(self._ids)}"
            self.sessions[session_id] = Session(reference, payment.amount_cents, payment.expires_at)
        if self.during_create is not None:
            await self.during_create()
        return GatewaySession(session_id=session_id, url=f"https://gateway.test/pay/{session_id}")

    async def get_session(self, session_id: str) -> GatewayState:
        self._call("get_session")
        return self._state(session_id)

    async def cancel_session(self, session_id: str) -> GatewayState:
        self._call("cancel_session")
        if self._session(session_id).status == "open":
            self.sessions[session_id].status = "expired"
        return self._state(session_id)

    async def refund(self, session_id: str, payment_id: uuid.UUID, amount_cents: int) -> str:
        self._call("refund")
        session = self._session(session_id)
        if session.status != "paid":
            raise GatewayRejected(f"cannot refund a session that is {session.status}")
        return session.refunds.setdefault(str(payment_id), f"re_{next(self._ids)}")

    def pay(self, session_id: str, outcome: str = "succeeded") -> None:
        """The customer on the hosted page (no callback: tests deliver those themselves)."""
        session = self._session(session_id)
        if session.status != "open":
            raise GatewayRejected(f"session is {session.status}")
        session.status = "paid" if outcome == "succeeded" else "failed"

    def forget(self) -> None:
        self.sessions.clear()

    def _call(self, name: str) -> None:
        if self.down or name in self.failing:
            raise DependencyUnavailable("gateway: HTTP 503")
        if name in self.refusing:
            raise GatewayRejected(f"gateway answered 409: {name} refused")

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise GatewayRejected(f"gateway answered 404: unknown session {session_id}")
        return session

    def _state(self, session_id: str) -> GatewayState:
        session = self._session(session_id)
        return GatewayState(session_id=session_id, status=session.status, amount_cents=session.amount_cents)
