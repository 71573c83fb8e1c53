"""What handlers need, wired once by bootstrap.py (tests wire fakes the same way)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from voucher_service.domain.errors import VoucherNotFound
from voucher_service.domain.model import Voucher
from voucher_service.service_layer.ports import FlashGate, Payments, Publisher, WriterLag
from voucher_service.service_layer.unit_of_work import UnitOfWork


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class VoucherCache:
    """Voucher terms per process for a few seconds. Terms never change after creation and no decision
    uses the cached used_count, so a stale entry is harmless; unknown codes are never cached."""

    ttl: float = 5.0
    _entries: dict[str, tuple[float, Voucher]] = field(default_factory=dict)

    def get(self, code: str) -> Voucher | None:
        hit = self._entries.get(code)
        return hit[1] if hit and hit[0] > time.monotonic() else None

    def put(self, voucher: Voucher) -> None:
        self._entries[voucher.code] = (time.monotonic() + self.ttl, voucher)


@dataclass
class Context:
    uow: Callable[[], UnitOfWork]
    gate: FlashGate | None = None
    publisher: Publisher | None = None
    cache: VoucherCache = field(default_factory=VoucherCache)
    reservation_ttl_seconds: float = 900.0
    clock: Callable[[], datetime] = utcnow
    # Single-flight warm-up per voucher in this process: a NOT_LOADED burst runs one warm-up, not one
    # per request (the adopt script's SET-NX semantics keep concurrent processes safe anyway).
    warm_locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    # Reloading a gate Redis lost waits for the Postgres writer (service_layer/warmup.py).
    writer_lag: WriterLag | None = None
    recovery_fence_seconds: float = 5.0
    recoveries: dict[str, Any] = field(default_factory=dict)
    # Asked before the expiry releases a use (service_layer/expiry.py); None: the expiry releases nothing.
    payments: Payments | None = None

    def joined(self, uow: UnitOfWork) -> Context:
        """The same context inside a transaction owned by someone else (a consumer)."""
        return replace(self, uow=lambda: uow)

    async def voucher(self, code: str) -> Voucher:
        cached = self.cache.get(code)
        if cached is not None:
            return cached
        async with self.uow() as uow:
            voucher = await uow.vouchers.get(code)
        if voucher is None:
            raise VoucherNotFound(f"voucher {code} not found")
        self.cache.put(voucher)
        return voucher

    def flash_gate(self) -> FlashGate:
        if self.gate is None:
            raise RuntimeError("flash-sale voucher but no gate configured")
        return self.gate
