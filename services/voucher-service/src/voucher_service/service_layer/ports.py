"""What the handlers need from the outside world: abstract ports, and `Deps`, built in bootstrap.py (the
flash-sale gate's port is in service_layer/gate_ports.py).

Adapters (adapters/) implement these with Postgres, Redis, Kafka and HTTP; unit tests subclass them with
in-memory fakes.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ticketing.events import VoucherReserved, utcnow
from ticketing.unit_of_work import UnitOfWork

from voucher_service.domain.commands import CreateVoucher
from voucher_service.domain.model import NormalAttempt, Redemption, Voucher
from voucher_service.service_layer.gate_ports import FlashGate
from voucher_service.service_layer.process_state import Recovery, VoucherCache


class VoucherRepository(abc.ABC):
    """Vouchers, their redemptions (uses) and the booking outcomes parked for uses not written yet."""

    @abc.abstractmethod
    async def add(self, cmd: CreateVoucher) -> bool:
        """False when the code exists already."""

    @abc.abstractmethod
    async def get(self, code: str) -> Voucher | None: ...

    @abc.abstractmethod
    async def give_back(self, code: str, n: int = 1) -> None: ...

    @abc.abstractmethod
    async def count_use(self, code: str) -> None:
        """Raise the counter for a redemption just inserted; OutOfStock when ck_used refuses an oversell."""

    @abc.abstractmethod
    async def standing(self, code: str, customer_id: int) -> tuple[int, int] | None:
        """(uses left, the customer's live uses); None for an unknown voucher."""

    @abc.abstractmethod
    async def insert_redemption(self, code: str, customer_id: int, order_id: str, amount: int | None,
                                status: str = "RESERVED") -> bool:
        """False when the order id exists already or the customer has no free slot. A concurrent insert
        that takes the same slot raises RedemptionConflict (the transaction is then aborted)."""

    @abc.abstractmethod
    async def write_reservations(self, rows: list[tuple[str, int, str, int]]) -> list[str]:
        """The flash writer's common case: (code, customer, order, amount) rows in one statement; one
        result per row (see write_reservations in sql/vouchers.sql). Raises like insert_redemption and
        count_use."""

    @abc.abstractmethod
    async def insert_tombstone(self, code: str, customer_id: int, order_id: str, amount: int | None,
                               cancelled: bool = False) -> bool:
        """A RELEASED row that owns the order id, so a late VoucherReserved can never count; `cancelled`: its
        booking was cancelled."""

    @abc.abstractmethod
    async def redemption(self, order_id: str) -> Redemption | None: ...

    @abc.abstractmethod
    async def confirm(self, order_id: str) -> bool:
        """RESERVED (or CONFIRMED) -> CONFIRMED; False when the use is RELEASED."""

    @abc.abstractmethod
    async def release(self, order_id: str) -> str | None:
        """RESERVED -> RELEASED once; returns the voucher code when this call released it."""

    @abc.abstractmethod
    async def cancel(self, order_id: str) -> str | None:
        """RESERVED or CONFIRMED -> RELEASED (its booking cancelled) once; the voucher code when this call
        released it."""

    @abc.abstractmethod
    async def expiry_candidates(self, ttl_seconds: float, recheck_seconds: float,
                                batch: int) -> list[tuple[int, str]]:
        """(row id, order id) of expired reservations, locked until commit; none when another
        instance's run is on."""

    @abc.abstractmethod
    async def release_expired(self, ids: list[int]) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def mark_expiry_checked(self, ids: list[int]) -> None: ...

    @abc.abstractmethod
    async def status_counts(self, code: str) -> dict[str, int]:
        """{"reserved": n, "confirmed": n, "released": n}."""

    @abc.abstractmethod
    async def live_redemptions(self, code: str) -> list[tuple[str, int]]:
        """(order id, customer id) of every live use."""

    @abc.abstractmethod
    async def known_orders(self, order_ids: list[str]) -> dict[str, str]:
        """order id -> status, for the ids Postgres has."""

    @abc.abstractmethod
    async def lock_orders(self, order_ids: list[str]) -> None:
        """Until the transaction ends, the writer and the outcomes of these orders wait for this one."""

    @abc.abstractmethod
    async def park_outcome(self, order_id: str, outcome: str) -> str:
        """The outcome parked for the order after this call: the first one parked stands."""

    @abc.abstractmethod
    async def park_cancellation(self, order_id: str) -> None:
        """Park CANCELLED for an order not written yet, over any outcome parked before."""

    @abc.abstractmethod
    async def take_outcome(self, order_id: str) -> str | None: ...

    @abc.abstractmethod
    async def purge_outcomes(self, older_than_seconds: float) -> None: ...

    @abc.abstractmethod
    async def flash_codes(self) -> list[str]:
        """Flash vouchers still selling."""


class VouchersUnitOfWork(UnitOfWork):
    vouchers: VoucherRepository


class NormalReservations(abc.ABC):
    """Normal mode's reservation: one statement, its own transaction (no unit of work: a BEGIN and a COMMIT
    would be two more round trips, the COMMIT with the hot row locked)."""

    @abc.abstractmethod
    async def reserve(self, code: str, customer_id: int, order_id: str, amount: int) -> NormalAttempt:
        """RedemptionConflict when a twin of the order, or another order of the customer in the same slot,
        committed first: nothing was written, ask again."""

    def use_returned(self, code: str) -> None:  # noqa: B027 (optional hook: only a caching adapter needs it)
        """A use of `code` was given back in this process: a sold-out answer kept for it is stale."""


class Publisher(abc.ABC):
    @property
    def ready(self) -> bool:
        """False while the producer is not connected (e.g. Kafka was down at start-up)."""
        return True

    @abc.abstractmethod
    async def publish(self, event: VoucherReserved) -> None:
        """Return once the broker acknowledged. SendRefused when the message surely never left; any other
        exception means the outcome is unknown (the message may still land)."""


class WriterLag(abc.ABC):
    """Offsets of the voucher-reserved topic partition that holds a voucher's messages."""

    @abc.abstractmethod
    async def end_offset(self, code: str) -> int:
        """The partition's end offset (the next message will get this offset)."""

    @abc.abstractmethod
    async def committed_offset(self, code: str) -> int:
        """The writer group's committed offset there (every message below it is in Postgres)."""


class Payments(abc.ABC):
    """payment-service, asked by the reservation expiry (the voucher orderId is the paymentId)."""

    @abc.abstractmethod
    async def status(self, payment_id: str) -> str | None:
        """PENDING | SUCCEEDED | FAILED | EXPIRED | REFUNDED, or None when payment-service never recorded
        the payment. Raises PaymentsUnavailable when it cannot tell."""


class QuoteLimit(abc.ABC):
    """Quotes per customer (VOUCHER_QUOTE_RATE_LIMIT_PER_MINUTE)."""

    @abc.abstractmethod
    async def retry_after(self, customer_id: int) -> int | None:
        """None: this quote may go on (it is counted); else the seconds to wait. Raises GateUnavailable
        when the count cannot be kept."""


@dataclass
class Deps:
    """Everything a handler may use; one per process, built by bootstrap.py (tests build it from fakes)."""

    uow: Callable[[], VouchersUnitOfWork]
    gate: FlashGate
    reservations: NormalReservations
    publisher: Publisher | None = None  # None in the worker, which never reserves
    writer_lag: WriterLag | None = None  # None: a gate Redis lost stays shut (warmup.py)
    payments: Payments | None = None  # None: the expiry and the reconciliation give nothing back
    quote_limit: QuoteLimit | None = None  # None: quotes unlimited (the worker, which answers none)
    reservation_ttl_seconds: float = 900.0
    recovery_fence_seconds: float = 5.0
    clock: Callable[[], datetime] = utcnow
    # Per-process state. It lives here, not in a module global, because every handler of the process must
    # share it and each test's Deps must start empty:
    # - voucher terms for a few seconds (a flash sale reads one voucher for every request);
    cache: VoucherCache = field(default_factory=VoucherCache)
    # - one warm-up per voucher at a time: a NOT_LOADED burst runs one, not one per request (the adopt
    #   script's SET-NX semantics keep concurrent processes safe anyway);
    warm_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # - the gates this process waits to reload after Redis lost them (warmup.py);
    recoveries: dict[str, Recovery] = field(default_factory=dict)
    # - codes the flash writer has seen (vouchers are never deleted: one look-up per code).
    known_codes: set[str] = field(default_factory=set)
