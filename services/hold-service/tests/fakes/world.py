"""`fake_deps`: hold-service's `Deps` on the fakes, and the `FakeWorld` a test arranges and reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from hold_service.adapters.room_credentials import SignedCredentials
from hold_service.config import HoldSettings
from hold_service.domain.hall import Prices, ShowtimeDetails, layout_hall, rows_hall
from hold_service.domain.model import Hold
from hold_service.service_layer.ports import (
    Deps,
)
from hold_service.service_layer.showtimes import seat_map
from ticketing_testing.in_memory import MemoryWorld

from .admission import FakeAdmission
from .room_queue import FakeRoomQueue
from .rooms import FakeRoomStore
from .rules import seat_is_free
from .seat_maps import FakeSeatMaps
from .tables import holds_db
from .unit_of_work import FakeHoldsUnitOfWork
from .writer import FakeHoldWriter


@dataclass
class FakeWorld(MemoryWorld):
    """hold-service's `deps` on the fakes, with what a test arranges (the clock, Redis' gate) and reads (the
    committed holds, seats and events)."""

    deps: Deps
    admission: FakeAdmission

    def events(self, type_: str | None = None) -> list[Any]:
        """Committed outbox events (of one type), in order."""
        return [e for e in self.outbox() if type_ in (None, e.type)]

    def holds(self) -> list[Hold]:
        """Committed holds, status as stored."""
        return self.db.committed("bookings")

    async def seat_map(self, showtime_id: int) -> dict[str, Any]:
        """The public seat map (service_layer.showtimes.seat_map) as its JSON body reads."""
        return dict(orjson.loads((await seat_map(showtime_id, self.deps)).body))

    def seats(self, showtime_id: int) -> dict[str, str]:
        """Committed seat statuses with lazy expiry applied (as a hold request finds them)."""
        now = self.clock.now()
        return {code: "AVAILABLE" if seat_is_free(s, now) else s.status
                for (sid, code), s in self.db.tables["seats"].items() if sid == showtime_id}

    async def showtime(self, rows: dict[str, int] | None = None, price_cents: int = 1200,
                       layout: list[dict[str, Any]] | None = None, prices: Prices | None = None) -> int:
        """A showtime on sale: `rows` at one ADULT price, or the hall's `layout` with its `prices`."""
        showtime_id = len(self.db.tables["showtimes"]) + 1
        async with self.deps.uow() as uow:
            places = layout_hall(layout) if layout is not None else rows_hall(rows or {"F": 10})
            starts_at = self.clock.now() + timedelta(days=1)  # on sale
            details = ShowtimeDetails(showtime_id, "Test", starts_at, prices or {"STANDARD": {"ADULT": price_cents}})
            await uow.holds.add_showtime(details, places)
            await uow.commit()
        return showtime_id


def fake_deps(**settings: Any) -> FakeWorld:
    """Settings as given (no environment, no .env), every port a fake on one clock."""
    config = HoldSettings(_env_file=None, **{"hold_rate_limit_per_minute": 1000, **settings})  # type: ignore[call-arg]
    db = holds_db()
    queue = FakeRoomQueue()
    admission = FakeAdmission(db.clock, config.hold_rate_limit_per_minute,
                              config.hold_rate_limit_per_ip_per_minute, queue)
    deps = Deps(settings=config, uow=lambda: FakeHoldsUnitOfWork(db), statements=lambda: FakeHoldsUnitOfWork(db),
                writer=FakeHoldWriter(db),
                admission=admission, seat_maps=FakeSeatMaps(db), rooms=FakeRoomStore(db), queue=queue,
                credentials=SignedCredentials(config.jwt_secret), now=db.clock.now)
    return FakeWorld(db=db, deps=deps, admission=admission)
