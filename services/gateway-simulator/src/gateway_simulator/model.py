"""Checkout sessions kept in memory.

State lives in this process only: restarting the simulator forgets every session. That is acceptable
for a dev/test tool (a real gateway is the durable party); payment-service treats an unknown session
like any gateway outage and retries.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["open", "paid", "failed", "expired"]


class SessionNotFound(Exception):
    pass


class SessionConflict(Exception):
    """The operation does not fit the session's state (pay an expired session, refund an unpaid one)."""


class RefundRefused(Exception):
    """Test control: the gateway refuses this refund for now (as a real one does when, say, the merchant's
    balance cannot cover it); the same refund asked again later may go through."""


@dataclass
class Session:
    session_id: str
    reference: str
    amount_cents: int
    callback_url: str
    expires_at: float  # unix seconds
    created: float = field(default_factory=time.time)
    status: Status = "open"
    decided: float | None = None  # unix seconds the customer paid or was declined
    refunds: dict[str, str] = field(default_factory=dict)  # idempotency key -> refund id

    def current_status(self, now: float) -> Status:
        # Lazy expiry, as real gateways report it: an open session past its time is expired.
        if self.status == "open" and now >= self.expires_at:
            self.status = "expired"
        return self.status


class SessionStore:
    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}
        self._by_reference: dict[str, str] = {}
        self.refunds_to_refuse = 0  # test control: the next this many refund requests are refused

    def refuse_refunds(self, count: int) -> int:
        """The next `count` refund requests (of any session) are refused; returns how many are left to refuse."""
        self.refunds_to_refuse = count
        return count

    def create(self, *, reference: str, amount_cents: int, callback_url: str, expires_at: float) -> Session:
        """Idempotent on `reference`: a retried create (same reference) returns the first session."""
        existing = self._by_reference.get(reference)
        if existing is not None:
            return self._by_id[existing]
        session = Session(session_id=f"cs_{secrets.token_hex(12)}", reference=reference,
                          amount_cents=amount_cents, callback_url=callback_url, expires_at=expires_at)
        self._by_id[session.session_id] = session
        self._by_reference[reference] = session.session_id
        return session

    def get(self, session_id: str) -> Session:
        try:
            session = self._by_id[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None
        session.current_status(time.time())
        return session

    def all(self) -> list[Session]:
        return list(self._by_id.values())

    def pay(self, session_id: str, outcome: Literal["succeeded", "failed"]) -> Session:
        session = self.get(session_id)
        if session.status != "open":
            raise SessionConflict(f"session is {session.status}")
        session.status = "paid" if outcome == "succeeded" else "failed"
        session.decided = time.time()
        return session

    def cancel(self, session_id: str) -> Session:
        """Expire an open session now; a paid or failed session keeps its state (and says so)."""
        session = self.get(session_id)
        if session.status == "open":
            session.status = "expired"
        return session

    def refund(self, session_id: str, idempotency_key: str, amount_cents: int | None = None) -> str:
        """Once per session, as a real gateway refunds a charge: the same key gets the same refund again;
        another refund of a refunded session, or one of more than was paid, is refused."""
        session = self.get(session_id)
        if session.status != "paid":
            raise SessionConflict(f"cannot refund a session that is {session.status}")
        if self.refunds_to_refuse > 0:
            self.refunds_to_refuse -= 1
            raise RefundRefused(f"refund of {session_id} refused ({self.refunds_to_refuse} more to refuse)")
        if (known := session.refunds.get(idempotency_key)) is not None:
            return known
        if session.refunds:
            raise SessionConflict("the session is refunded already")
        if amount_cents is not None and not 0 < amount_cents <= session.amount_cents:
            raise SessionConflict(f"a refund of {amount_cents} cents is more than the {session.amount_cents} paid")
        session.refunds[idempotency_key] = refund_id = f"re_{secrets.token_hex(12)}"
        return refund_id
