"""The contracts of Admission (rate limit + seat gate) and SeatMaps, run against the fakes (tests/fakes/)
and the real adapters on Postgres and Redis, one node and a Redis Cluster."""

from __future__ import annotations

import uuid

import orjson
import pytest
import pytest_asyncio
from hold_service.service_layer.ports import Admitted
from ticketing_testing import eventually

pytestmark = pytest.mark.integration
PER_MINUTE = 3


@pytest_asyncio.fixture(params=["fake", "real", "real-cluster"])
async def ports(request, h, fakes, hold_dsn, redis_url):  # type: ignore[no-untyped-def]
    nodes = request.getfixturevalue("redis_cluster").nodes if request.param == "real-cluster" else ""
    async with h.open_ports(request.param, fakes, hold_dsn, redis_url, per_minute=PER_MINUTE,
                            per_address=PER_MINUTE, cluster_nodes=nodes) as opened:
        yield opened


# --- Admission ------------------------------------------------------------------------------------

async def test_the_gate_turns_away_seats_another_hold_has_all_or_nothing(ports, h) -> None:
    sid, first, second, third = h.new_id(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    gate = ports.admission
    assert await gate.admit(h.new_id(), sid, ["A1", "A2"], first, 600) == Admitted(None, [])
    assert await gate.admit(h.new_id(), sid, ["A1", "A2"], first, 600) == Admitted(None, [])  # the same hold: go on
    assert await gate.admit(h.new_id(), sid, ["A2", "A3"], second, 600) == Admitted(None, ["A2"])
    assert await gate.admit(h.new_id(), sid, ["A3"], third, 600) == Admitted(None, [])  # the refusal took no key


async def test_released_keys_free_the_seats_but_only_their_own_holds(ports, h) -> None:
    sid, first, second = h.new_id(), uuid.uuid4(), uuid.uuid4()
    gate = ports.admission
    await gate.admit(h.new_id(), sid, ["A1"], first, 600)
    await gate.release(sid, ["A1"], second)  # a stale hold cannot free another's seat
    assert await gate.admit(h.new_id(), sid, ["A1"], second, 600) == Admitted(None, ["A1"])
    await gate.release(sid, ["A1"], first)
    assert await gate.admit(h.new_id(), sid, ["A1"], second, 600) == Admitted(None, [])


async def test_the_keys_of_many_ended_holds_go_together_each_only_its_own(ports, h) -> None:
    one, two, first, second, taker = h.new_id(), h.new_id(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    gate = ports.admission
    await gate.admit(h.new_id(), one, ["A1", "A2"], first, 600)
    await gate.admit(h.new_id(), two, ["A1"], second, 600)
    await gate.admit(h.new_id(), one, ["B1"], taker, 600)
    await gate.release_holds([(one, ["A1", "A2", "B1"], first), (two, ["A1"], second)])  # B1 is not first's
    for sid, seats in ((one, ["A1", "A2"]), (two, ["A1"])):
        assert await gate.admit(h.new_id(), sid, seats, uuid.uuid4(), 600) == Admitted(None, [])
    assert await gate.admit(h.new_id(), one, ["B1"], uuid.uuid4(), 600) == Admitted(None, ["B1"])


async def test_gate_keys_last_as_long_as_the_hold(ports, h) -> None:
    sid = h.new_id()
    await ports.admission.admit(h.new_id(), sid, ["A1"], uuid.uuid4(), 0.3)
    await ports.elapse(0.6)
    assert await ports.admission.admit(h.new_id(), sid, ["A1"], uuid.uuid4(), 600) == Admitted(None, [])


async def test_a_customer_past_the_rate_limit_waits_and_takes_no_seat(ports, h) -> None:
    sid, customer = h.new_id(), h.new_id()
    for n in range(1, PER_MINUTE + 1):
        assert await ports.admission.admit(customer, sid, [f"A{n}"], uuid.uuid4(), 600) == Admitted(None, [])
    refused = await ports.admission.admit(customer, sid, ["B1"], uuid.uuid4(), 600)
    assert 1 <= refused.wait <= 60 and refused.taken == []
    assert await ports.admission.admit(h.new_id(), sid, ["B1"], uuid.uuid4(), 600) == Admitted(None, [])  # others go on


async def test_an_address_past_its_limit_waits_whoever_asks_and_takes_no_seat(ports, h) -> None:
    sid, address = h.new_id(), f"2001:db8::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"  # this test's own
    for n in range(1, PER_MINUTE + 1):
        assert await ports.admission.admit(h.new_id(), sid, [f"A{n}"], uuid.uuid4(), 600,
                                           address=address) == Admitted(None, [])
    # The address limit is a sliding-window counter (adapters/lua/address_rate_limit.lua): a full window is
    # waited out into the next one until its weight lets one more in, up to 60 s + 60 s / limit.
    longest = 60 + 60 // PER_MINUTE
    refused = await ports.admission.admit(h.new_id(), sid, ["B1"], uuid.uuid4(), 600, address=address)
    assert 1 <= refused.wait <= longest and refused.taken == []
    assert 1 <= await ports.admission.address_wait(address) <= longest  # a queue join from it waits too
    assert await ports.admission.admit(h.new_id(), sid, ["B1"], uuid.uuid4(), 600,
                                       address=f"{address}1") == Admitted(None, [])  # other addresses go on


# --- SeatMaps -------------------------------------------------------------------------------------

async def test_the_seat_map_of_an_unknown_showtime_is_none(ports, h) -> None:
    assert await ports.seat_maps.get(h.new_id()) is None


async def _seat_map(ports, sid: int, version: int) -> dict:
    """The map once it shows `version` (the real maps follow the changes a moment after COMMIT)."""
    async def shown() -> dict | None:
        view = await ports.seat_maps.get(sid)
        return None if view.version < version else orjson.loads(view.body)
    found = await eventually(shown, timeout=10)
    assert found["version"] == version  # no change skipped, none invented
    return found


async def test_the_seat_map_follows_the_committed_changes_statuses_as_recorded(ports, h) -> None:
    sid = await ports.showtime(seats=3)
    assert await _seat_map(ports, sid, 0) == {
        "showtimeId": sid, "title": "Contract", "startsAt": "2031-01-01T00:00:00Z", "version": 0,
        "durationMinutes": None, "cinema": None, "hall": None, "timeZone": "UTC",
        "prices": {"STANDARD": {"ADULT": 1200}},
        "seats": [{"code": f"A{n}", "status": "AVAILABLE", "category": "STANDARD", "row": "A", "x": n}
                  for n in (1, 2, 3)]}
    await ports.take(sid, ["A2"], ttl=0.3)
    held = await _seat_map(ports, sid, 1)
    assert [s["status"] for s in held["seats"]] == ["AVAILABLE", "HELD", "AVAILABLE"]
    await ports.elapse(0.6)
    # Lapsed but not yet recorded: still HELD at version 1 (one ETag, one body; snapshot + changes = GET).
    assert orjson.loads((await ports.seat_maps.get(sid)).body) == held
    await ports.take(sid, ["A2"])  # the re-hold records the release (version 2), then its own hold (3)
    assert [s["status"] for s in (await _seat_map(ports, sid, 3))["seats"]] == ["AVAILABLE", "HELD", "AVAILABLE"]


async def test_the_seat_map_lists_seats_in_hall_order(ports) -> None:
    sid = await ports.showtime(seats=11)
    assert [s["code"] for s in (await _seat_map(ports, sid, 0))["seats"]] == [f"A{n}" for n in range(1, 12)]
