"""In-memory fakes of payment-service's ports (service_layer/ports.py) for unit tests, and `fake_deps`.

The repositories decide as the named queries of sql/payments.sql do (every transition conditional, the
one-live-payment-per-hold index, the CHECKs of migration 0002); the gateway keeps sessions as the simulator
does (open, paid, failed, expired by its clock; cancel; refunds idempotent on the payment id); the
vouchers keep uses per orderId as voucher-service does. The port contract tests
(tests/integration/test_contract_*.py) run the same tests against these and the real adapters.
Tests reach this module as `kit.fakes` (conftest.py).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from payment_service.config import Settings
from payment_service.domain.errors import (
    DependencyUnavailable,
    GatewayRejected,
    HoldNotActive,
    HoldNotFound,
    ShowtimeClosed,
    VoucherRejected,
)
from payment_service.domain.model import Hold, Payment
from payment_service.service_layer.ports import (
    CallbackEventRepository,
    Deps,
    Gateway,
    GatewaySession,
    GatewayState,
    HoldDirectory,
    IdempotencyRepository,
    PaymentRepository,
    PaymentsUnitOfWork,
    Pending,
    Unresolved,
    Vouchers,
)
from ticketing_testing.in_memory import Clock, MemoryDb, MemoryTransaction, MemoryUnitOfWork, MemoryWorld

TABLES = ("payments", "keys", "callbacks", "outbox")


@dataclass(frozen=True)
class Row:
    """A payment row: the domain's Payment and the columns only the queries read."""

    payment: Payment
    idempotency_key: str
    created_at: datetime
    cancel_requested_at: datetime | None = None
    gateway_paid_at: datetime | None = None
    booking_confirmed_at: datetime | None = None
    refund_due_since: datetime | None = None
    refund_next_at: datetime | None = None
    refund_last_error: str | None = None

    def set(self, **changes: Any) -> Row:
        payment = {k: changes.pop(k) for k in list(changes) if k in Payment.__dataclass_fields__}
        return replace(self, payment=replace(self.payment, **payment), **changes)

    @property
    def owes_refund(self) -> bool:
        return self.payment.refund_reason is not None and self.payment.status != "REFUNDED"


def payments_db(clock: Clock | None = None) -> MemoryDb:
    return MemoryDb(*TABLES, clock=clock)


class FakePaymentRepository(PaymentRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx, self.now, self.rows = tx, tx.now, tx["payments"]

    def _update(self, payment_id: uuid.UUID, when: Callable[[Row], bool], **changes: Any) -> Payment | None:
        """A conditional UPDATE ... RETURNING: the changed payment, or None when the row did not qualify."""
        row = self.rows.get(payment_id)
        if row is None or not when(row):
            return None
        row = self.rows[payment_id] = _checked(row.set(**changes))
        return row.payment

    async def add(self, p: Payment, idempotency_key: str, max_attempts: int) -> None:
        live = {"PENDING", "SUCCEEDED"}
        of_hold = [r for r in self.rows.values() if r.payment.hold_id == p.hold_id]
        if len(of_hold) >= max_attempts:
            return  # the hold's attempts are used up
        if p.payment_id in self.rows or any(r.payment.status in live for r in of_hold):
            return  # ON CONFLICT DO NOTHING (the key, or one live payment per hold)
        self.rows[p.payment_id] = Row(replace(p, status="PENDING"), idempotency_key, self.now)

    async def get(self, payment_id: uuid.UUID) -> Payment | None:
        row = self.rows.get(payment_id)
        return None if row is None else row.payment

    async def of_hold(self, hold_id: uuid.UUID) -> list[Payment]:
        return [r.payment for r in self.rows.values() if r.payment.hold_id == hold_id]

    async def lock_pending_of_hold(self, hold_id: uuid.UUID) -> Payment | None:
        return next((p for p in await self.of_hold(hold_id) if p.status == "PENDING"), None)

    async def attach_session(self, payment_id: uuid.UUID, session_id: str, url: str) -> bool | None:
        attached = self._update(payment_id, lambda r: r.payment.session_id is None, session_id=session_id,
                                redirect_url=url)
        return None if attached is None else self.rows[payment_id].cancel_requested_at is not None

    async def request_cancel(self, payment_id: uuid.UUID) -> tuple[bool, str | None]:
        row = self.rows.get(payment_id)
        if row is None or row.payment.status != "PENDING":
            return False, None
        self.rows[payment_id] = replace(row, cancel_requested_at=row.cancel_requested_at or self.now)
        return True, row.payment.session_id

    async def settle(self, payment_id: uuid.UUID, status: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "PENDING", status=status,
                            gateway_paid_at=self.now if status == "SUCCEEDED" else None)

    async def paid_after_settlement(self, payment_id: uuid.UUID) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status in ("FAILED", "EXPIRED")
                            and r.payment.refund_reason is None, gateway_paid_at=self.now,
                            refund_reason="PAID_AFTER_SETTLEMENT", refund_due_since=self.now, refund_next_at=self.now)

    async def refund_due(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "SUCCEEDED" and r.payment.refund_reason is None
                            and r.booking_confirmed_at is None, refund_reason=reason, refund_due_since=self.now,
                            refund_next_at=self.now)

    async def refund_cancelled(self, payment_id: uuid.UUID, reason: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status == "SUCCEEDED" and r.payment.refund_reason is None,
                            refund_reason=reason, refund_due_since=self.now, refund_next_at=self.now)

    async def booking_confirmed(self, payment_id: uuid.UUID) -> Payment | None:
        def bookable(r: Row) -> bool:
            p = r.payment
            return r.booking_confirmed_at is None and (
                (p.status == "SUCCEEDED" and p.refund_reason is None)
                or (p.status in ("SUCCEEDED", "REFUNDED") and p.refunded_for_cancellation))
        return self._update(payment_id, bookable, booking_confirmed_at=self.now)

    async def claim_refunds(self, limit: int, lease_seconds: float) -> list[Payment]:
        due = sorted((r for r in self.rows.values() if r.owes_refund and r.refund_next_at is not None
                      and r.refund_next_at <= self.now), key=lambda r: r.refund_next_at or self.now)[:limit]
        lease = self.now + timedelta(seconds=lease_seconds)
        return [p for r in due if (p := self._update(r.payment.payment_id, lambda _: True, refund_next_at=lease))]

    async def mark_refunded(self, payment_id: uuid.UUID, refund_id: str) -> Payment | None:
        return self._update(payment_id, lambda r: r.payment.status in ("SUCCEEDED", "FAILED", "EXPIRED")
                            and r.payment.refund_reason is not None, status="REFUNDED", refund_id=refund_id,
                            refund_next_at=None, refund_last_error=None)

    async def refund_failed(self, payment_id: uuid.UUID, retry_in: float, error: str) -> None:
        row = self.rows.get(payment_id)
        if row is not None:
            self._update(payment_id, lambda r: r.payment.status != "REFUNDED", refund_last_error=error,
                         refund_attempts=row.payment.refund_attempts + 1,
                         refund_next_at=self.now + timedelta(seconds=retry_in))

    async def pending_to_reconcile(self, after_seconds: float, limit: int = 500) -> list[Pending]:
        since = self.now - timedelta(seconds=after_seconds)
        rows = [r for r in self.rows.values() if r.payment.status == "PENDING"
                and (r.payment.expires_at <= self.now or r.created_at < since or r.cancel_requested_at is not None)]
        return [Pending(payment=r.payment, past=r.payment.expires_at <= self.now,
                        cancel_requested=r.cancel_requested_at is not None)
                for r in sorted(rows, key=lambda r: r.created_at)[:limit]]

    async def unresolved(self, bound_seconds: float) -> Unresolved:
        bound = self.now - timedelta(seconds=bound_seconds)
        owed = [r.refund_due_since for r in self.rows.values() if r.owes_refund and r.refund_due_since]
        unbooked = [r for r in self.rows.values() if r.payment.status == "SUCCEEDED" and r.booking_confirmed_at is None
                    and r.payment.refund_reason is None and r.gateway_paid_at and r.gateway_paid_at < bound]
        return Unresolved(refunds_pending=len(owed), refunds_overdue=sum(since < bound for since in owed),
                          paid_unbooked=len(unbooked), oldest_refund_due=min(owed, default=None))

    async def purge(self, events_after: float, keys_after: float) -> tuple[str, str]:
        return (_delete_before(self.tx["callbacks"], self.now - timedelta(seconds=events_after)),
                _delete_before(self.tx["keys"], self.now - timedelta(seconds=keys_after)))


def _checked(row: Row) -> Row:
    """The CHECK constraints of migrations 0002 and 0003: a violation aborts the statement, as in Postgres."""
    p = row.payment
    if p.status == "REFUNDED" and row.gateway_paid_at is None:
        raise ValueError("refund_of_paid: only money the gateway took comes back")
    if row.booking_confirmed_at is not None and p.refund_reason is not None and not p.refunded_for_cancellation:
        raise ValueError("booked_or_refunded: a booked payment is refunded only for a cancellation")
    return row


def _delete_before(table: dict[Any, Any], cutoff: datetime) -> str:
    old = [k for k, v in table.items() if v[-1] < cutoff]  # rows are tuples ending with their time
    for k in old:
        del table[k]
    return f"DELETE {len(old)}"


class FakeIdempotencyRepository(IdempotencyRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def get(self, customer_id: int, key: str) -> tuple[str, uuid.UUID] | None:
        stored = self.tx["keys"].get((customer_id, key))
        return None if stored is None else (stored[0], stored[1])

    async def claim(self, customer_id: int, key: str, request_hash: str, payment_id: uuid.UUID) -> bool:
        if (customer_id, key) in self.tx["keys"]:
            return False
        self.tx["keys"][(customer_id, key)] = (request_hash, payment_id, self.tx.now)
        return True


class FakeCallbackEventRepository(CallbackEventRepository):
    def __init__(self, tx: MemoryTransaction) -> None:
        self.tx = tx

    async def seen(self, event_id: str) -> bool:
        return event_id in self.tx["callbacks"]

    async def record(self, event_id: str, event_type: str, session_id: str | None) -> bool:
        if event_id in self.tx["callbacks"]:
            return False
        self.tx["callbacks"][event_id] = (event_type, session_id, self.tx.now)
        return True


class FakePaymentsUnitOfWork(MemoryUnitOfWork, PaymentsUnitOfWork):
    def bind(self, tx: MemoryTransaction) -> None:
        self.payments = FakePaymentRepository(tx)
        self.keys = FakeIdempotencyRepository(tx)
        self.callbacks = FakeCallbackEventRepository(tx)

    async def publish(self, event: Any) -> None:
        assert self.tx is not None
        self.tx["outbox"][self.db.next_id()] = event  # published (relayed) only once committed


class FakeHoldDirectory(HoldDirectory):
    """hold-service's answers; `now` is hold-service's clock (the wall clock unless a test passes one). An
    extension follows hold-service's rules: HELD and live only, max(current, until), capped at the hold's
    creation + `hold_max` seconds; `extended` records each one that moved a hold (a HoldExtended)."""

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC), hold_max: float = 1200) -> None:
        self.now, self.hold_max = now, hold_max
        self.holds: dict[uuid.UUID, Hold] = {}
        self.extended: list[tuple[uuid.UUID, datetime]] = []
        self.down = False
        self.closed: set[int] = set()  # showtimes whose sales are closed

    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        self._reachable()
        hold = self.holds.get(hold_id)
        if hold is not None and hold.status == "HELD" and hold.expires_at < self.now():
            return replace(hold, status="EXPIRED")  # lazy expiry, by hold-service's clock
        return hold

    async def extend(self, hold_id: uuid.UUID, customer_id: int, until: datetime) -> datetime:
        hold = await self.get(hold_id)
        if hold is None or hold.customer_id != customer_id:
            raise HoldNotFound(str(hold_id))
        if hold.status != "HELD":
            raise HoldNotActive(f"the hold is {hold.status}")
        if hold.showtime_id in self.closed:
            raise ShowtimeClosed("sales of this showtime are closed")
        cap = (hold.created_at or hold.expires_at) + timedelta(seconds=self.hold_max)
        expires = min(max(hold.expires_at, until), cap)
        if expires > hold.expires_at:
            self.holds[hold_id] = replace(hold, expires_at=expires)
            self.extended.append((hold_id, expires))
        return expires

    def add(self, customer_id: int, *, amount: int = 2400, ttl: float = 600, status: str = "HELD",
            age: float = 0) -> Hold:
        """A hold taken `age` seconds ago that ends in `ttl` seconds; `ttl` <= 0: a hold whose time passed,
        which hold-service reports as EXPIRED."""
        now = self.now()
        hold = Hold(hold_id=uuid.uuid4(), booking_id=uuid.uuid4(), customer_id=customer_id,
                    showtime_id=900_000 + customer_id % 1000, status="EXPIRED" if ttl <= 0 else status,
                    expires_at=now + timedelta(seconds=ttl), amount_cents=amount,
                    created_at=now - timedelta(seconds=age))
        self.holds[hold.hold_id] = hold
        return hold

    def _reachable(self) -> None:
        if self.down:
            raise DependencyUnavailable("hold-service: ConnectError")

    def end(self, hold_id: uuid.UUID, status: str = "RELEASED") -> None:
        self.holds[hold_id] = replace(self.holds[hold_id], status=status)


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


@dataclass
class FakeWorld(MemoryWorld):
    """payment-service's `deps` on the fakes, with the other parties a test arranges (hold-service, the
    vouchers, the gateway, the clock) and what it reads (committed payment rows and events)."""

    deps: Deps
    holds: FakeHoldDirectory
    vouchers: FakeVouchers
    gateway: FakeGateway

    def events(self, payment_id: uuid.UUID | None = None) -> list[Any]:
        """Committed outbox events (of one payment), in order."""
        return [e for e in self.outbox() if payment_id in (None, e.data.paymentId)]

    def row(self, payment_id: uuid.UUID) -> Row:
        """The committed row of a payment."""
        row: Row = self.db.tables["payments"][payment_id]
        return row


def fake_deps(**settings: Any) -> FakeWorld:
    """Settings as given (no environment, no .env), every port a fake on one clock."""
    db = payments_db()
    holds, vouchers, gateway = FakeHoldDirectory(db.clock.now), FakeVouchers(), FakeGateway(db.clock)
    config = Settings(_env_file=None, **settings)  # type: ignore[call-arg]
    holds.hold_max = config.hold_max_seconds
    deps = Deps(settings=config, uow=lambda: FakePaymentsUnitOfWork(db), statements=lambda: FakePaymentsUnitOfWork(db),
                holds=holds, vouchers=vouchers,
                gateway=gateway, clock=db.clock.now)
    return FakeWorld(deps=deps, db=db, holds=holds, vouchers=vouchers, gateway=gateway)
