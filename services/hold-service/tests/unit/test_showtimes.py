"""create_showtime and seat_map on the fakes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hold_service.domain.commands import CreateShowtime
from hold_service.domain.errors import InvalidSeats, ShowtimeExists, ShowtimeNotFound
from hold_service.domain.hall import ShowtimeDetails
from hold_service.service_layer.showtimes import create_showtime


def premiere(showtime_id: int, rows: dict[str, int]) -> CreateShowtime:
    details = ShowtimeDetails(showtime_id, "Premiere", datetime(2030, 12, 24, 20, tzinfo=UTC),
                              {"STANDARD": {"ADULT": 1200}})
    return CreateShowtime(details, rows=rows)


async def test_a_showtime_is_created_with_every_seat_available_in_hall_order(fakes) -> None:
    world = fakes.fake_deps()
    assert await create_showtime(premiere(42, {"B": 1, "A": 10}), world.deps) == 11
    shown = await world.seat_map(42)
    assert (shown["showtimeId"], shown["version"]) == (42, 0)
    codes = [s["code"] for s in shown["seats"]]
    assert codes == [*(f"A{n}" for n in range(1, 11)), "B1"]  # A2 before A10
    assert {s["status"] for s in shown["seats"]} == {"AVAILABLE"}


async def test_a_showtime_id_is_used_once(fakes) -> None:
    world = fakes.fake_deps()
    await create_showtime(premiere(42, {"A": 2}), world.deps)
    with pytest.raises(ShowtimeExists):
        await create_showtime(premiere(42, {"A": 5}), world.deps)
    assert len(world.seats(42)) == 2


async def test_a_bad_layout_creates_nothing(fakes) -> None:
    world = fakes.fake_deps()
    with pytest.raises(InvalidSeats):
        await create_showtime(premiere(42, {"a": 2}), world.deps)
    with pytest.raises(ShowtimeNotFound):
        await world.seat_map(42)
