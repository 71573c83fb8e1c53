"""RoomStore: the waiting rooms' configuration and decisions, beside the fake holds."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from hold_service.domain.commands import ConfigureRoom
from hold_service.domain.room_rush import OpenReason, enabled_after, mode_of
from hold_service.domain.waiting_room import (
    RoomConfig,
    RoomFacts,
)
from hold_service.service_layer.events import waiting_room_changed
from hold_service.service_layer.room_ports import RoomStore
from ticketing_testing.in_memory import MemoryDb

from .rules import as_seen, seat_is_free


class FakeRoomStore(RoomStore):
    """The rooms' configuration and decisions, beside the fake holds (the facts are read from them)."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db
        self.rooms: dict[int, RoomConfig] = {}
        self.leases: dict[int, int] = {}
        self.seeds: dict[int, str] = {}
        self.started: set[int] = set()
        self.quiet_since: dict[int, datetime | None] = {}

    async def configure(self, cmd: ConfigureRoom) -> tuple[RoomConfig, bool] | None:
        if cmd.showtime_id not in self.db.begin()["showtimes"]:
            return None
        mode, was = mode_of(cmd.enabled, cmd.mode), self._on(cmd.showtime_id)
        config = RoomConfig(cmd.showtime_id, enabled_after(mode, was), cmd.active_limit, cmd.opens_at, mode=mode,
                            open_at_arrivals=cmd.open_at_arrivals, open_at_active=cmd.open_at_active)
        return self._change(config, "OPERATOR", changed=config.enabled != was), config.enabled != was

    async def open_automatically(self, showtime_id: int, reason: OpenReason, active_limit: int) -> RoomConfig | None:
        config = self.rooms.get(showtime_id) or RoomConfig(showtime_id, False, active_limit, None, mode="auto")
        showtime = self.db.begin()["showtimes"].get(showtime_id)
        on_sale = showtime is not None and showtime.status != "CANCELLED" and showtime.starts_at > self.db.clock.now()
        if config.mode != "auto" or config.enabled or not on_sale:  # as open_room_automatically
            return None
        return self._change(replace(config, enabled=True), reason)

    async def automatic_rooms(self, limit: int) -> list[RoomConfig]:
        return [c for c in self.rooms.values() if c.mode == "auto" and c.enabled][:limit]

    async def note_quiet(self, showtime_id: int, quiet: bool) -> datetime | None:
        if (config := self.rooms.get(showtime_id)) is None or config.mode != "auto" or not config.enabled:
            return None
        since = self.quiet_since.get(showtime_id) or self.db.clock.now()
        self.quiet_since[showtime_id] = since if quiet else None
        return self.quiet_since[showtime_id]

    async def close_automatically(self, showtime_id: int, after_seconds: float) -> RoomConfig | None:
        config, since = self.rooms.get(showtime_id), self.quiet_since.get(showtime_id)
        if config is None or not config.enabled or config.mode != "auto" or since is None \
                or since > self.db.clock.now() - timedelta(seconds=after_seconds):
            return None
        return self._change(replace(config, enabled=False), "RUSH_OVER")

    async def rooms_on(self) -> int:
        return sum(c.enabled for c in self.rooms.values())

    def _on(self, showtime_id: int) -> bool:
        return (config := self.rooms.get(showtime_id)) is not None and config.enabled

    def _change(self, config: RoomConfig, reason: str, changed: bool = True) -> RoomConfig:
        """Store the room; a change of its state with its event, in one transaction (as the adapter does)."""
        if changed:
            config = replace(config, changed_reason=reason, changed_at=self.db.clock.now())
        tx = self.db.begin()
        if changed:
            tx["outbox"][self.db.next_id()] = waiting_room_changed(config.showtime_id, config.enabled, reason,
                                                                   config.active_limit)
        tx.commit()
        self.rooms[config.showtime_id] = config
        self.quiet_since.pop(config.showtime_id, None)
        return config

    async def config(self, showtime_id: int) -> RoomConfig | None:
        return self.rooms.get(showtime_id)

    async def facts(self, showtime_id: int) -> RoomFacts | None:
        config = self.rooms.get(showtime_id)
        if config is None:
            return None
        tx = self.db.begin()
        seats = [s for (sid, _), s in tx["seats"].items() if sid == showtime_id]
        live = [s for s in seats if s.status == "HELD" and not seat_is_free(s, tx.now)]
        holders = sorted({b.customer_id for b in tx["bookings"].values()
                          if b.showtime_id == showtime_id and as_seen(b, tx.now).status == "HELD"})
        return RoomFacts(config, self.leases.get(showtime_id, 0), self.seeds.get(showtime_id),
                         available=sum(seat_is_free(s, tx.now) for s in seats), held=len(live), holders=holders,
                         started=showtime_id in self.started)

    async def extend_lease(self, showtime_id: int, seconds: float) -> int:
        until = int((self.db.clock.now().timestamp() + seconds) * 1000)
        self.leases[showtime_id] = max(self.leases.get(showtime_id, 0), until)
        return self.leases[showtime_id]

    async def mark_started(self, showtime_id: int) -> None:
        self.started.add(showtime_id)

    async def fix_seed(self, showtime_id: int, seed: str) -> str:
        return self.seeds.setdefault(showtime_id, seed)
