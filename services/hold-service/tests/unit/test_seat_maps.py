"""The in-memory seat maps of an API process: versions in order, gaps, loads, fan-out, slow clients, trust."""

from __future__ import annotations

import asyncio
import gc
import weakref

import orjson
import pytest
from hold_service.adapters import seat_maps
from hold_service.adapters.seat_map_source import SeatMapSource
from hold_service.adapters.seat_map_subscribers import HEARTBEAT, Subscriber
from hold_service.adapters.seat_maps import FeedDown, LiveSeatMaps
from hold_service.adapters.stream_leases import StreamLeases
from hold_service.domain.errors import TooManyStreams
from hold_service.domain.seat_map import SeatChange, SeatMap, Step
from prometheus_client import REGISTRY

SID = 42
ADDRESS = "192.0.2.1"


class FakeSource(SeatMapSource):
    """Postgres' side: the map at its newest version; `gate` holds a load open until the test lets it go."""

    def __init__(self, seats: int = 4) -> None:
        self.version, self.seats = 0, {f"A{n}": "AVAILABLE" for n in range(1, seats + 1)}
        self.loads, self.gate = 0, asyncio.Event()
        self.gate.set()

    def commit(self, status: str, *codes: str) -> SeatChange:
        self.version += 1
        self.seats.update(dict.fromkeys(codes, status))
        return SeatChange(SID, self.version, status, codes)

    async def load(self, showtime_id: int) -> SeatMap | None:
        self.loads += 1
        snapshot = SeatMap(showtime_id, self.version, dict(self.seats))
        await self.gate.wait()
        return snapshot if showtime_id == SID else None


def maps(source: SeatMapSource, **overrides: float) -> LiveSeatMaps:
    options = {"capacity": 10, "missing_seconds": 1.0, "stale_seconds": 2.0, "stream_buffer_bytes": 4096,
               "max_streams": 100, **overrides}
    live = LiveSeatMaps(source, **options)  # type: ignore[arg-type]
    live.feed_up()
    return live


def body(view) -> dict:  # type: ignore[no-untyped-def]
    return orjson.loads(view.body)  # type: ignore[no-any-return]


def test_a_map_applies_the_next_version_only() -> None:
    seat_map = SeatMap(SID, 3, {"A1": "AVAILABLE", "A2": "AVAILABLE"})
    assert seat_map.apply(SeatChange(SID, 3, "HELD", ("A1",))) is Step.ALREADY_IN
    assert seat_map.apply(SeatChange(SID, 5, "HELD", ("A1",))) is Step.GAP
    assert seat_map.apply(SeatChange(SID, 4, "HELD", ("B9",))) is Step.GAP  # not its seats
    assert seat_map.apply(SeatChange(SID, 4, "HELD", ("A1",))) is Step.APPLIED
    assert seat_map.version == 4 and seat_map.seats == {"A1": "HELD", "A2": "AVAILABLE"}


async def test_read_once_from_the_source_then_moved_by_changes() -> None:
    source = FakeSource()
    live = maps(source)
    first = await live.get(SID)
    assert first is not None and body(first) == {"showtimeId": SID, "title": "", "startsAt": None, "version": 0,
                                                 "seats": [
        {"code": f"A{n}", "status": "AVAILABLE"} for n in range(1, 5)]}
    live.apply(source.commit("HELD", "A1", "A2"))
    live.apply(source.commit("BOOKED", "A1", "A2"))
    view = await live.get(SID)
    assert view is not None and view.version == 2 and body(view)["seats"][0] == {"code": "A1", "status": "BOOKED"}
    assert source.loads == 1
    assert await live.get(SID) is view  # the same bytes until the next version


async def test_changes_during_a_load_are_applied_after_it() -> None:
    source = FakeSource()
    live = maps(source)
    source.gate.clear()
    reads = [asyncio.ensure_future(live.get(SID)) for _ in range(5)]
    await asyncio.sleep(0)  # the load has taken its snapshot (version 0) and waits
    live.apply(source.commit("HELD", "A3"))  # committed after the snapshot, arrives during the load
    source.gate.set()
    views = await asyncio.gather(*reads)
    assert source.loads == 1 and {v.version for v in views if v} == {1}
    assert body(views[0])["seats"][2]["status"] == "HELD"


async def test_a_gap_drops_the_map_resets_its_streams_and_the_next_read_reloads() -> None:
    source = FakeSource()
    live = maps(source)
    sub = await live.subscribe(SID, ADDRESS)
    assert sub is not None
    source.commit("HELD", "A1")
    live.apply(source.commit("HELD", "A2"))  # version 2 without 1: missed
    assert sub.closed == "reset" and await sub.next() is None
    view = await live.get(SID)
    assert view is not None and view.version == 2 and source.loads == 2 and live.streams == 0


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_operators_see_streams_feed_gaps_and_why_streams_ended() -> None:
    source = FakeSource(seats=60)
    before = {"streams": _metric("ticketing_seat_map_streams"),
              "gaps": _metric("ticketing_seat_map_resets_total", cause="gap"),
              "slow": _metric("ticketing_seat_map_streams_ended_total", reason="slow"),
              "reset": _metric("ticketing_seat_map_streams_ended_total", reason="reset")}
    live = maps(source, stream_buffer_bytes=4096)
    assert _metric("ticketing_seat_map_feed_up") == 1
    slow, other = await live.subscribe(SID, ADDRESS), await live.subscribe(SID, ADDRESS)
    assert slow is not None and other is not None
    assert _metric("ticketing_seat_map_streams") == before["streams"] + 2
    for n in range(60):  # `slow` never reads: dropped
        live.apply(source.commit("HELD", f"A{n + 1}"))
        await other.next()
    assert _metric("ticketing_seat_map_streams_ended_total", reason="slow") == before["slow"] + 1
    source.commit("AVAILABLE", "A1")
    live.apply(source.commit("AVAILABLE", "A2"))  # a version missed
    assert _metric("ticketing_seat_map_resets_total", cause="gap") == before["gaps"] + 1
    assert _metric("ticketing_seat_map_streams_ended_total", reason="reset") == before["reset"] + 1
    assert _metric("ticketing_seat_map_streams") == before["streams"]
    live.feed_down()
    assert _metric("ticketing_seat_map_feed_up") == 0


async def test_subscribers_get_each_version_once_in_order_then_heartbeats() -> None:
    source = FakeSource()
    live = maps(source)
    sub = await live.subscribe(SID, ADDRESS)
    assert sub is not None and sub.take_snapshot().version == 0
    for change in (source.commit("HELD", "A1"), source.commit("AVAILABLE", "A1")):
        live.apply(change)
    live.apply(SeatChange(SID, 1, "HELD", ("A1",)))  # a repeat: already applied, not sent again
    frames = await sub.next()
    assert frames is not None
    assert frames.count(b"event: change") == 2 and frames.index(b"id: 1") < frames.index(b"id: 2")
    live.tick(heartbeat=True, send_timeout=30)
    assert await sub.next() == HEARTBEAT


async def test_a_subscriber_that_falls_behind_is_closed_and_freed() -> None:
    source = FakeSource(seats=60)
    live = maps(source, stream_buffer_bytes=4096)
    slow, fast = await live.subscribe(SID, ADDRESS), await live.subscribe(SID, ADDRESS)
    assert slow is not None and fast is not None
    for n in range(60):  # ~40 bytes a change, never read by `slow`
        live.apply(source.commit("HELD", f"A{n + 1}"))
        assert await fast.next() is not None
    assert slow.closed == "slow" and not slow.frames and live.streams == 1


async def test_a_write_stuck_on_a_client_is_interrupted() -> None:
    live = maps(FakeSource())

    async def stream() -> None:
        sub = await live.subscribe(SID, ADDRESS)
        assert sub is not None
        sub.sending(True)
        await asyncio.Event().wait()  # a write to a client that does not read

    task = asyncio.ensure_future(stream())
    await asyncio.sleep(0.01)
    live.tick(heartbeat=True, send_timeout=0.0)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live.streams == 0


async def test_unknown_showtime_is_remembered_briefly() -> None:
    source = FakeSource()
    live = maps(source)
    assert await live.get(7) is None and await live.get(7) is None and await live.subscribe(7, ADDRESS) is None
    assert source.loads == 1


async def test_without_the_feed_maps_are_served_briefly_then_reloaded_and_streams_refused() -> None:
    source = FakeSource()
    live = maps(source, stale_seconds=0.05)
    await live.get(SID)
    sub = await live.subscribe(SID, ADDRESS)
    live.feed_down()
    source.commit("HELD", "A1")  # nobody tells this process
    assert (await live.get(SID)).version == 0  # type: ignore[union-attr]
    with pytest.raises(FeedDown):
        await live.subscribe(SID, ADDRESS)
    await asyncio.sleep(0.06)
    live.tick(heartbeat=False, send_timeout=30)
    assert sub is not None and sub.closed == "reset"
    assert (await live.get(SID)).version == 1  # type: ignore[union-attr]  # from the source per read
    live.feed_up()  # listening again: every map is reloaded when next read
    assert not live.maps and (await live.get(SID)).version == 1  # type: ignore[union-attr]


async def test_least_read_maps_go_first_but_never_a_streamed_one() -> None:
    class Many(FakeSource):
        async def load(self, showtime_id: int) -> SeatMap | None:
            return SeatMap(showtime_id, 0, {"A1": "AVAILABLE"})

    live = maps(Many(), capacity=2)
    assert await live.subscribe(1, ADDRESS) is not None
    for sid in (2, 3, 4):
        await live.get(sid)
    assert list(live.maps) == [1, 4]


async def test_subscriber_frames_are_the_contract() -> None:
    from hold_service.adapters.seat_map_subscribers import change_frame, snapshot_frame
    from hold_service.service_layer.seat_map_ports import SeatMapView

    frame = change_frame(SeatChange(SID, 7, "HELD", ("A1", "A2")))
    assert frame == (b'event: change\nid: 7\ndata: {"version":7,"seats":[{"code":"A1","status":"HELD"},'
                     b'{"code":"A2","status":"HELD"}]}\n\n')
    snapshot = snapshot_frame(SeatMapView(3, b'{"showtimeId":42}'))
    assert snapshot.startswith(b"retry: ") and snapshot.endswith(b'event: snapshot\nid: 3\ndata: {"showtimeId":42}\n\n')
    sub = Subscriber(SID, SeatMapView(3, b"{}"), 4096, lambda _: None)
    assert not hasattr(sub, "__dict__")  # thousands per process: slots only


async def test_a_stream_keeps_no_snapshot_once_it_is_taken() -> None:
    source = FakeSource()
    live = maps(source)
    sub = await live.subscribe(SID, ADDRESS)
    assert sub is not None
    first = sub.take_snapshot()
    gone = weakref.ref(first)
    live.apply(source.commit("HELD", "A1"))
    assert (await live.get(SID)).version == 1  # type: ignore[union-attr]  # the map moved on
    del first
    gc.collect()
    assert gone() is None  # nothing kept the map the stream began with
    with pytest.raises(RuntimeError):
        sub.take_snapshot()


async def test_a_map_pinned_by_streams_past_the_capacity_goes_with_its_last_stream() -> None:
    class Many(FakeSource):
        async def load(self, showtime_id: int) -> SeatMap | None:
            return SeatMap(showtime_id, 0, {"A1": "AVAILABLE"})

    live = maps(Many(), capacity=1)
    one, two = await live.subscribe(1, ADDRESS), await live.subscribe(2, ADDRESS)
    also_one = await live.subscribe(1, "192.0.2.2")
    assert one and two and also_one and list(live.maps) == [1, 2]  # both streamed: kept past the capacity
    one.close("gone")
    assert list(live.maps) == [1, 2]  # 1 still has a stream
    also_one.close("gone")
    assert list(live.maps) == [2]  # its last stream ended: back within the capacity at once
    two.close("gone")
    assert list(live.maps) == [2]  # within the capacity: kept for the next reader


async def test_streams_per_address_are_capped_and_given_back() -> None:
    live = maps(FakeSource(), leases=StreamLeases(None, 2))  # type: ignore[arg-type]
    first, second = await live.subscribe(SID, ADDRESS), await live.subscribe(SID, ADDRESS)
    with pytest.raises(TooManyStreams):
        await live.subscribe(SID, ADDRESS)
    assert await live.subscribe(SID, "192.0.2.99") is not None  # another client is not affected
    assert await live.subscribe(7, ADDRESS) is None  # an unknown showtime: 404, no stream counted
    assert first is not None and second is not None
    first.close("gone")
    assert await live.subscribe(SID, ADDRESS) is not None
    assert second.lease in live.leases.open[ADDRESS] and len(live.leases.open[ADDRESS]) == 2


async def test_unknown_showtimes_remembered_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seat_maps, "MAX_MISSING", 50)
    live = maps(FakeSource(), missing_seconds=3600)
    for sid in range(1000, 1500):  # made-up ids, faster than they lapse
        assert await live.get(sid) is None
    assert len(live.missing) <= 50
