"""HoldDirectory: hold-service's answers, in memory."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from payment_service.domain.errors import (
    DependencyUnavailable,
    HoldNotActive,
    HoldNotFound,
    ShowtimeClosed,
)
from payment_service.domain.model import Hold
from payment_service.service_layer.ports import (
    HoldDirectory,
)


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
