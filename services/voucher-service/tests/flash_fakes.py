"""In-memory fakes of the ports (flash gate, publisher, payment-service): real subclasses, no Mock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticketing.events import VoucherReserved
from voucher_service.domain.commands import ReserveVoucher
from voucher_service.domain.errors import PaymentsUnavailable, SendRefused
from voucher_service.domain.gate import GateOrder, GateResult
from voucher_service.domain.model import NormalAttempt, Voucher
from voucher_service.service_layer.gate_ports import FlashGate
from voucher_service.service_layer.ports import (
    Deps,
    NormalReservations,
    Payments,
    Publisher,
    VouchersUnitOfWork,
)

NOW = datetime(2030, 1, 1, tzinfo=UTC)
VOUCHER = Voucher("FLASH", 700, 1000, 2, 0, 1, NOW - timedelta(hours=1), NOW + timedelta(hours=1), True)


class FakeGate(FlashGate):
    """The Lua scripts' semantics in memory."""

    def __init__(self, remaining: int) -> None:
        self.left, self.users, self.held = remaining, {}, {}  # type: ignore[var-annotated]
        self.calls, self.out_until = 0, False

    async def reserve(self, code: str, customer_id: int, per_user_limit: int, order_id: str,
                      order_amount: int) -> GateResult:
        self.calls += 1
        if order_id in self.held:
            state, cust = self.held[order_id]
            if cust == customer_id and state == "R":
                return GateResult.DUPLICATE
            if cust == customer_id and state in ("P", "S"):
                self.held[order_id] = ("S", cust)  # a retry sends again: no longer forgettable
                return GateResult.PENDING
            return GateResult.ORDER_TAKEN
        if self.users.get(customer_id, 0) >= per_user_limit:
            return GateResult.ALREADY_USED
        if self.left <= 0:
            return GateResult.OUT_OF_STOCK
        self.left -= 1
        self.users[customer_id] = self.users.get(customer_id, 0) + 1
        self.held[order_id] = ("P", customer_id)
        return GateResult.RESERVED

    async def mark_sent(self, code: str, order_id: str) -> None:
        if self.held.get(order_id, ("", 0))[0] in ("P", "S"):
            self.held[order_id] = ("R", self.held[order_id][1])

    async def release(self, code: str, order_id: str, *, forget: bool = False, retire: bool = False) -> int:
        state, cust = self.held.get(order_id, (None, 0))
        if state not in ("R", "P", "S") or (forget and state != "P"):
            return -1 if state is None else 0
        if forget:
            del self.held[order_id]
        else:
            self.held[order_id] = ("X", cust)
        self.left += 0 if retire else 1
        self.users[cust] -= 1
        return 1

    async def order(self, code: str, order_id: str) -> GateOrder | None:
        state, cust = self.held.get(order_id, (None, 0))
        return GateOrder(order_id, state, cust, 0, 0) if state else None

    async def orders(self, code: str) -> list[GateOrder]:
        return []

    async def holds(self, code: str, order_id: str, customer_id: int) -> bool:
        state, cust = self.held.get(order_id, (None, 0))
        return state in ("P", "S", "R") and cust == customer_id

    async def remaining(self, code: str) -> int | None:
        return self.left

    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        return self.left, self.users.get(customer_id, 0)

    async def record(self, code: str, mode: str, remaining: int, pairs: list[tuple[str, int]],
                     expire_at: int = 0) -> int:
        return 0

    def sold_out(self, code: str) -> bool:
        return self.out_until

    def mark_sold_out(self, code: str) -> None:
        self.out_until = True


class FakePublisher(Publisher):
    """fail: None (acknowledged), "refused" (surely never left) or "unknown" (no ack: it may still land)."""

    def __init__(self, fail: str | None = None) -> None:
        self.sent: list[VoucherReserved] = []
        self.fail = fail

    async def publish(self, event: VoucherReserved) -> None:
        if self.fail == "refused":
            raise SendRefused("the producer refused the message")
        if self.fail == "unknown":
            raise TimeoutError("broker did not acknowledge")
        self.sent.append(event)


class FakePayments(Payments):
    """payment-service in memory: payment id -> status; absent: never recorded; `down`: cannot tell."""

    def __init__(self, statuses: dict[str, str] | None = None, down: bool = False) -> None:
        self.statuses, self.down, self.asked = dict(statuses or {}), down, []  # type: ignore[var-annotated]

    async def status(self, payment_id: str) -> str | None:
        self.asked.append(payment_id)
        if self.down:
            raise PaymentsUnavailable("payment-service is down")
        return self.statuses.get(payment_id)


class NoNormalReservations(NormalReservations):
    """Flash vouchers only: a normal-mode reservation here is a bug of the test or of the handler."""

    async def reserve(self, code: str, customer_id: int, order_id: str, amount: int) -> NormalAttempt:
        raise AssertionError("flash reserve must not take a normal-mode use")


def fake_deps(gate: FakeGate, publisher: FakePublisher) -> Deps:
    def no_db() -> VouchersUnitOfWork:
        raise AssertionError("flash reserve must not touch Postgres")
    return Deps(uow=no_db, gate=gate, reservations=NoNormalReservations(), publisher=publisher, clock=lambda: NOW)


def cmd(customer: int, order: str) -> ReserveVoucher:
    return ReserveVoucher("FLASH", customer, order, 5000)
