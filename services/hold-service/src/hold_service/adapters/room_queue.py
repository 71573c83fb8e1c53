"""Every waiting room's queue in Redis: one Lua script per operation (adapters/lua/room_*.lua).

A room's keys share the hash tag of its showtime, `wr:{42}:queue` (as the seat gate's `seat:{42}:F5`), so
each script's keys are in one Redis Cluster slot, with the seat keys too. What they hold:
state (hash: the room's flags and figures), pre (zset: who joined before the opening), queue (zset: who
waits, by place), active (zset: who is choosing seats, by the end of his slot), tickets (hash: each
customer's current ticket), seen (zset: when each waiting customer last polled), pickup (zset: admitted
customers who have not come for their token yet), admits (list: admissions of the last minute), claims (hash:
which customer claimed a visitor's place, room_claim.lua).
All of it may be lost: the room then rebuilds itself (room_step.lua, room_poll.lua) and Postgres keeps what
must survive (sql/migrations/0005_waiting_room.sql).
Beside the queue, the showtime's crowd for the automatic mode (room_arrive.lua): present (zset: who was seen
when) and arrivals (hash: customers new to it per 10 s); losing them only delays an opening.
"""

from __future__ import annotations

from typing import Any

from ticketing.batching import TickBatcher
from ticketing.redis_client import is_cluster

from hold_service.adapters.redis_guard import RedisGuard
from hold_service.adapters.redis_script import LuaScript, run_together
from hold_service.domain.room_rush import Crowd
from hold_service.domain.waiting_room import (
    Joined,
    QueueView,
    RoomFacts,
    RoomFigures,
    StepOutcome,
    Ticket,
    to_ms,
)
from hold_service.service_layer.room_ports import RoomQueue

ROOM_KEYS = ("state", "pre", "queue", "active", "tickets", "seen", "pickup", "admits")
KEEP_MS = 2 * 86_400_000  # a room's keys outlive its last step by two days
MAX_SCAN = 5_000  # queue entries one script run looks at or moves at the opening: bounds its run time


def room_keys(showtime_id: int) -> list[str]:
    return [f"wr:{{{showtime_id}}}:{name}" for name in ROOM_KEYS]


def crowd_keys(showtime_id: int) -> list[str]:
    return [f"wr:{{{showtime_id}}}:present", f"wr:{{{showtime_id}}}:arrivals"]


def room_key(showtime_id: int, name: str) -> str:
    return f"wr:{{{showtime_id}}}:{name}"


class RedisRoomQueue(RoomQueue):
    def __init__(self, guard: RedisGuard, step_seconds: float, abandon_seconds: float) -> None:
        self.guard = guard
        self.step_ms, self.abandon_ms = int(step_seconds * 1000), int(abandon_seconds * 1000)
        self.max_scan = MAX_SCAN
        client = guard.client
        self._cluster = is_cluster(client)
        self._join, self._poll = LuaScript(client, "room_join.lua"), LuaScript(client, "room_poll.lua")
        self._step, self._leave = LuaScript(client, "room_step.lua"), LuaScript(client, "room_leave.lua")
        self._arrive, self._claim = LuaScript(client, "room_arrive.lua"), LuaScript(client, "room_claim.lua")
        # Polls of one showtime arriving in the same loop turn go to Redis in one round trip (as holds do,
        # admission.py): at an opening, thousands of customers poll the same room.
        self._polls: TickBatcher[int, list[Any], list[Any]] = TickBatcher(self._poll_many)
        # Arrivals too: every hold request counts one, so one script run per showtime and loop turn counts them.
        self._arrivals: TickBatcher[tuple[int, int], int, Crowd] = TickBatcher(self._arrive_many)

    async def join(self, ticket: Ticket, opens_at_ms: int) -> Joined | None:
        got = await self.guard.call("room.join", self._run(
            self._join, room_keys(ticket.showtime_id), [ticket.customer_id, ticket.nonce, opens_at_ms]))
        if got is None:
            return None
        value, position, sold_out = got
        nonce, joined = str(value).split(":")
        mine = Ticket(showtime_id=ticket.showtime_id, customer_id=ticket.customer_id, nonce=nonce,
                      joined_us=int(joined))
        return Joined(ticket=mine, position=None if position < 0 else int(position), sold_out=bool(sold_out))

    async def poll(self, ticket: Ticket, opens_at_ms: int) -> QueueView | None:
        got = await self._polls.add(ticket.showtime_id, [
            ticket.customer_id, f"{ticket.nonce}:{ticket.joined_us}", ticket.joined_us, opens_at_ms, self.step_ms])
        if got is None:
            return None
        what, value, sold_out, rate, paused_until, now, due = got
        return QueueView(state=what, position=int(value) if what == "queued" else None,
                         slot_ms=int(value) if what == "admitted" else 0, sold_out=bool(sold_out),
                         rate_per_minute=float(rate), paused_until_ms=int(paused_until), now_ms=int(now),
                         step_due=bool(due))

    async def claim(self, ticket: Ticket, customer_id: int | None) -> tuple[str, int] | None:
        keys = [*room_keys(ticket.showtime_id), room_key(ticket.showtime_id, "claims")]
        got = await self.guard.call("room.claim", self._run(self._claim, keys,
                                                            [ticket.customer_id, customer_id or 0, KEEP_MS]))
        return None if got is None else (str(got[0]), int(got[1]))

    async def _poll_many(self, showtime_id: int, polls: list[list[Any]]) -> list[list[Any]] | None:
        keys = room_keys(showtime_id)
        return await self.guard.call("room.poll", run_together(self.guard.client,
                                                               [(self._poll, keys, args) for args in polls]))

    async def _run(self, script: LuaScript, keys: list[str], args: list[Any]) -> Any:
        """One script call over the raw connection (redis-py's command path costs more than the script)."""
        return (await run_together(self.guard.client, [(script, keys, args)]))[0]

    async def step(self, facts: RoomFacts, slot_seconds: float) -> StepOutcome | str | None:
        config = facts.config
        args: list[Any] = [config.active_limit, to_ms(config.opens_at), facts.lease_ms, facts.seed or "",
                           facts.available, facts.held, ",".join(map(str, facts.holders)), int(slot_seconds * 1000),
                           self.abandon_ms, self.max_scan, KEEP_MS, int(facts.started), int(self._cluster)]
        got = await self.guard.call("room.step", self._step(room_keys(config.showtime_id), args))
        if got is None:
            return None
        if got[0] != "ok":
            return str(got[0])
        _, admitted, dropped, queued, active, rate, sold_out = got
        return StepOutcome(admitted=int(admitted), dropped=int(dropped), queued=int(queued), active=int(active),
                           rate_per_minute=float(rate), sold_out=bool(sold_out))

    async def arrive(self, showtime_id: int, customer_id: int, window_seconds: float) -> Crowd | None:
        return await self._arrivals.add((showtime_id, int(window_seconds * 1000)), customer_id)

    async def crowd(self, showtime_id: int, window_seconds: float) -> Crowd | None:
        got = await self.guard.call("room.crowd", self._run(self._arrive, crowd_keys(showtime_id),
                                                            [int(window_seconds * 1000)]))
        return None if got is None else Crowd(int(got[0]), int(got[1]))

    async def _arrive_many(self, batch: tuple[int, int], customers: list[int]) -> list[Crowd] | None:
        showtime_id, window_ms = batch
        got = await self.guard.call("room.arrive", self._run(self._arrive, crowd_keys(showtime_id),
                                                             [window_ms, *customers]))
        return None if got is None else [Crowd(int(got[0]), int(got[1]))] * len(customers)

    async def leave(self, showtime_id: int, customer_id: int) -> None:
        await self.guard.call("room.leave", self._leave(room_keys(showtime_id), [customer_id]))

    async def figures(self, showtime_id: int) -> RoomFigures | None:
        state: dict[str, str] | None = await self.guard.call(
            "room.figures", self.guard.client.hgetall(room_key(showtime_id, "state")))  # type: ignore[arg-type]
        if not state or "stepped_at" not in state:
            return None
        return RoomFigures(queued=int(state["queued"]), active=int(state["active"]),
                           admitted_total=int(state.get("admitted", 0)), rate_per_minute=float(state["rate"]),
                           sold_out=state["sold_out"] == "1", available=int(state["available"]),
                           held=int(state["held"]), opened=state.get("opened") == "1",
                           paused_until_ms=int(state.get("paused_until", 0)))
