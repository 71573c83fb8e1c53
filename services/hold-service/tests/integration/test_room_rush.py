"""The automatic waiting room on real Postgres and Redis: a showtime nobody configured opens its room itself under
a burst of arrivals reaching two API processes at once (one WaitingRoomOpened in the outbox, valid against the
event catalogue), holds taken before stay, the queue admits in order, the worker's `rooms` role closes the room
only once its queue has drained and the rush has been over a while; the counting itself (room_arrive.lua)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hold_service.adapters.room_queue import crowd_keys
from hold_service.domain.commands import ConfigureRoom
from hold_service.service_layer.room_rush import watch_rooms
from ticketing.events import decode_booking_event
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration

# Open when 10 customers are active at once (active: seen within ADMISSION_TOKEN_TTL_SECONDS, 2 s here, so the
# rush is over 2 s after the last one); arrivals per minute too high to matter. Close 1 s after the rush.
RUSH = {"waiting_room_auto_default": True, "waiting_room_auto_open_at_arrivals_per_minute": 10**6,
        "waiting_room_auto_open_at_active": 10, "waiting_room_auto_active_limit": 2,
        "waiting_room_auto_close_after_seconds": 1, "admission_token_ttl_seconds": 2, "waiting_room_cache_seconds": 0.2}


async def room_events(db, sid: int) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 ORDER BY id",
                          f"showtime:{sid}")
    return [json.loads(r["e"]) for r in rows]


async def still_open(svc, db, sid: int) -> bool:  # type: ignore[no-untyped-def]
    """One run of the worker's `rooms` role; whether the showtime's room is still on."""
    await watch_rooms(svc.deps)
    return bool(await db.fetchval("SELECT enabled FROM waiting_room WHERE showtime_id = $1", sid))


async def test_a_showtime_nobody_configured_opens_itself_once_under_a_burst(start, db, h) -> None:
    async with start(**RUSH) as one, start(**RUSH) as two:
        sid = await one.showtime(rows={"F": 20})
        early = [h.new_id() for _ in range(3)]
        holds = [await one.hold(sid, [f"F{n + 1}"], customer=c) for n, c in enumerate(early)]
        assert [r.status_code for r in holds] == [201] * 3
        burst = [h.new_id() for _ in range(16)]  # the seat-map page's look, at both processes at once
        looks = await asyncio.gather(*[(one if k % 2 else two).client.get(
            f"/showtimes/{sid}/waiting-room", headers=h.auth(c)) for k, c in enumerate(burst)])
        assert all(r.status_code == 200 for r in looks)
        late = await two.hold(sid, ["F10"], customer=burst[0])
        assert late.status_code == 403 and late.json()["error"] == "ADMISSION_REQUIRED"

        async def refused_at_one() -> bool:
            r = await one.hold(sid, ["F11"], customer=burst[1])
            return r.status_code == 403 or None  # type: ignore[return-value]
        await eventually(refused_at_one, timeout=5)
    events = await room_events(db, sid)
    assert [(e["type"], e["data"]["reason"], e["data"]["activeLimit"]) for e in events] == [
        ("WaitingRoomOpened", "ACTIVE", 2)]
    decoded = decode_booking_event(json.dumps(events[0]).encode())
    assert decoded.type == "WaitingRoomOpened" and decoded.showtimeId == sid  # type: ignore[union-attr]
    row = await db.fetchrow("SELECT mode, enabled, changed_reason FROM waiting_room WHERE showtime_id = $1", sid)
    assert dict(row) == {"mode": "auto", "enabled": True, "changed_reason": "ACTIVE"}
    statuses = await db.fetch("SELECT status FROM show_seat WHERE showtime_id = $1 AND seat_code = ANY($2)", sid,
                              ["F1", "F2", "F3"])
    assert [r["status"] for r in statuses] == ["HELD"] * 3  # holds taken before the opening stay


async def test_the_queue_admits_in_order_and_the_room_closes_only_after_it_drained(start, db, h, rooms) -> None:
    async with start(**RUSH) as svc:
        sid = await svc.showtime(rows={"F": 20})
        await asyncio.gather(*[svc.client.get(f"/showtimes/{sid}/waiting-room", headers=h.auth(h.new_id()))
                               for _ in range(12)])
        assert (await svc.hold(sid, ["F1"])).status_code == 403  # open (ACTIVE)
        queued = [h.new_id() for _ in range(5)]
        tickets = [(await rooms.join(svc.client, sid, c)).json()["ticket"] for c in queued]
        order: list[int] = []
        await asyncio.sleep(2.1)  # the burst's customers are no longer active: only the queue keeps it open
        while len(order) < len(queued):
            for customer, ticket in zip(queued, tickets, strict=True):
                r = (await rooms.poll(svc.client, ticket, customer)).json()
                if r.get("admitted") and customer not in order:  # (a slot that ended: 404, gone)
                    order.append(customer)
            assert await still_open(svc, db, sid)  # (other tests' rooms may close: the role looks at all)
            await asyncio.sleep(0.2)
        assert order == queued  # first come, first served; 2 at a time, slots of 2 s

        async def closed() -> bool | None:
            return not await still_open(svc, db, sid) or None
        await eventually(closed, timeout=15, interval=0.3)
        assert (await svc.hold(sid, ["F2"])).status_code == 201  # no token needed any more
        figures = await svc.client.get(f"/admin/showtimes/{sid}/waiting-room", headers=h.auth(1, "admin"))
        assert figures.json()["mode"] == "auto" and figures.json()["changedReason"] == "RUSH_OVER"
        assert figures.json()["enabled"] is False
    assert [(e["type"], e["data"]["reason"]) for e in await room_events(db, sid)] == [
        ("WaitingRoomOpened", "ACTIVE"), ("WaitingRoomClosed", "RUSH_OVER")]


async def test_operator_modes_force_the_room_and_the_first_form_still_works(start, db, h) -> None:
    async with start(**RUSH) as svc:
        sid, admin = await svc.showtime(), h.auth(1, "admin")
        url = f"/admin/showtimes/{sid}/waiting-room"
        off = await svc.client.put(url, headers=admin, json={"mode": "off"})
        assert off.status_code == 200 and off.json()["mode"] == "off" and off.json()["activeLimit"] == 2
        await asyncio.gather(*[svc.client.get(f"/showtimes/{sid}/waiting-room", headers=h.auth(h.new_id()))
                               for _ in range(12)])
        assert (await svc.hold(sid, ["F1"])).status_code == 201  # forced off: no rush opens it
        on = await svc.client.put(url, headers=admin, json={"enabled": True, "activeLimit": 5})
        assert on.json()["mode"] == "on" and on.json()["enabled"] is True
        auto = await svc.client.put(url, headers=admin, json={"mode": "auto", "openAtArrivalsPerMinute": 50,
                                                              "openAtActive": 60})
        expected = {"mode": "auto", "enabled": True, "activeLimit": 2, "openAtArrivalsPerMinute": 50,
                    "openAtActive": 60, "changedReason": "OPERATOR"}  # still on: the rush decides from here
        assert {k: auto.json()[k] for k in expected} == expected
        for body in ({"mode": "sometimes"}, {"mode": "on", "enabled": True, "activeLimit": 2}, {},
                     {"mode": "auto", "openAtActive": 0}):
            bad = await svc.client.put(url, headers=admin, json=body)
            assert bad.status_code == 422 and bad.json()["error"] == "VALIDATION_ERROR", body
    assert [(e["type"], e["data"]["reason"], e["data"]["activeLimit"]) for e in await room_events(db, sid)] == [
        ("WaitingRoomOpened", "OPERATOR", 5)]


async def test_arrivals_count_new_customers_per_minute_and_active_ones(start, h) -> None:
    async with start(**RUSH) as svc:
        sid, queue = await svc.showtime(), svc.deps.queue
        await svc.redis.delete(*crowd_keys(sid))
        crowds = await asyncio.gather(*[queue.arrive(sid, c, 2) for c in (1, 2, 3, 1, 2)])
        assert crowds[-1] is not None and (crowds[-1].arrivals_per_minute, crowds[-1].active) == (3, 3)
        again = await queue.arrive(sid, 1, 2)  # the same customer again: not new
        assert again is not None and (again.arrivals_per_minute, again.active) == (3, 3)
        await asyncio.sleep(2.1)
        later = await queue.crowd(sid, 2)
        assert later is not None and (later.arrivals_per_minute, later.active) == (3, 0)  # arrivals: the minute
        back = await queue.arrive(sid, 1, 2)  # gone longer than a slot: new again
        assert back is not None and (back.arrivals_per_minute, back.active) == (4, 1)


@pytest.mark.parametrize("kind", ["fake", "real"])
async def test_the_room_store_decides_as_postgres_does(kind: str, start, fakes) -> None:  # type: ignore[no-untyped-def]
    """The contract of RoomStore's decisions, run against the fake (unit tests) and the adapter: the opening and
    the closing happen once, forced modes are never changed, and a room closes only after its quiet time."""
    async with start(**RUSH) as svc:
        if kind == "fake":
            world = fakes.fake_deps(**RUSH)
            store, make = world.deps.rooms, world.showtime

            async def advance(seconds: float) -> None:
                world.clock.advance(seconds)
        else:
            store, make, advance = svc.deps.rooms, svc.showtime, asyncio.sleep
        auto, forced = await make(), await make()
        opened = await store.open_automatically(auto, "ARRIVALS", 7)
        assert opened is not None and (opened.enabled, opened.mode, opened.active_limit) == (True, "auto", 7)
        assert await store.open_automatically(auto, "ACTIVE", 7) is None  # once
        assert (await store.configure(ConfigureRoom(forced, False, 3, None, mode="off")))[1] is False
        assert await store.open_automatically(forced, "ARRIVALS", 7) is None  # forced off wins
        assert auto in {c.showtime_id for c in await store.automatic_rooms(1000)}
        assert await store.note_quiet(auto, False) is None
        assert await store.note_quiet(auto, True) is not None
        assert await store.close_automatically(auto, 0.5) is None  # not quiet for long enough yet
        await advance(0.6)
        closed = await store.close_automatically(auto, 0.5)
        assert closed is not None and not closed.enabled and closed.changed_reason == "RUSH_OVER"
        assert await store.close_automatically(auto, 0.5) is None  # once
        assert await store.note_quiet(auto, True) is None  # off: nothing to be quiet about

