"""What one process keeps between requests (held by `Deps`): voucher terms for a few seconds, and the
flash gates it is waiting to reload after Redis lost them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from voucher_service.domain.model import Voucher


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
class Recovery:
    """This process saw the voucher's gate missing; waiting for the writer to catch up (warmup.py)."""

    detected: float
    mark: int | None = None  # end offset read after the fence
    checked: float = 0.0
    seen: float = 0.0
