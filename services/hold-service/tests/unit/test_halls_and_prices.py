"""Halls as they are drawn, prices by category and ticket type, and holds priced by the server (on the fakes)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hold_service.domain.commands import CreateShowtime
from hold_service.domain.errors import InvalidSeats, ShowtimeNotFound, UnpricedTickets
from hold_service.domain.hall import ShowtimeDetails, check_prices, from_price_cents, layout_hall
from hold_service.domain.model import HoldSeats, Ticket
from hold_service.service_layer.holds import get_hold, hold_seats
from hold_service.service_layer.showtimes import create_showtime

LAYOUT = [{"row": "A", "blocks": [{"from": 1, "to": 2, "category": "ACCESSIBLE"}, {"gap": 2},
                                  {"from": 3, "to": 4, "category": "COMPANION"}, {"from": 5, "to": 6}]},
          {"row": "K", "blocks": [{"gap": 1}, {"from": 1, "to": 3, "category": "VIP"}]}]
PRICES = {"STANDARD": {"ADULT": 1200, "CHILD": 800, "SENIOR": 900}, "VIP": {"ADULT": 1800, "CHILD": 1300},
          "ACCESSIBLE": {"ADULT": 1200, "CHILD": 800}, "COMPANION": {"ADULT": 0}}


def test_a_layout_gives_each_seat_its_category_and_its_place_counting_the_gaps() -> None:
    places = {p.code: (p.category, p.row, p.x) for p in layout_hall(LAYOUT)}
    assert places == {"A1": ("ACCESSIBLE", "A", 1), "A2": ("ACCESSIBLE", "A", 2), "A3": ("COMPANION", "A", 5),
                      "A4": ("COMPANION", "A", 6), "A5": ("STANDARD", "A", 7), "A6": ("STANDARD", "A", 8),
                      "K1": ("VIP", "K", 2), "K2": ("VIP", "K", 3), "K3": ("VIP", "K", 4)}


@pytest.mark.parametrize("layout", [
    [{"row": "A", "blocks": [{"from": 1, "to": 4}, {"from": 3, "to": 6}]}],  # overlapping numbers
    [{"row": "A", "blocks": [{"from": 5, "to": 1}]}],  # backwards
    [{"row": "A", "blocks": [{"from": 1, "to": 2}]}, {"row": "A", "blocks": [{"from": 3, "to": 4}]}],  # row twice
    [{"row": "A", "blocks": [{"gap": 3}]}],  # no seats
    [{"row": "A", "blocks": [{"from": 1, "to": 9999}]}],  # past the showtime's seats
])
def test_a_bad_layout_is_refused(layout: list[dict]) -> None:
    with pytest.raises(InvalidSeats):
        layout_hall(layout)


def test_every_category_used_needs_an_adult_price() -> None:
    check_prices(PRICES, layout_hall(LAYOUT))
    with pytest.raises(UnpricedTickets) as refused:
        check_prices({"STANDARD": {"ADULT": 1200}, "VIP": {"CHILD": 900}}, layout_hall(LAYOUT))
    assert refused.value.seats == ["VIP", "ACCESSIBLE", "COMPANION"]
    assert from_price_cents(PRICES) == 0


async def test_a_showtime_without_a_price_for_a_category_it_uses_is_not_created(fakes) -> None:
    world = fakes.fake_deps()
    details = ShowtimeDetails(5, "Dune", datetime(2030, 1, 1, tzinfo=UTC), {"STANDARD": {"ADULT": 1200}})
    with pytest.raises(UnpricedTickets):
        await create_showtime(CreateShowtime(details, layout=LAYOUT), world.deps)
    with pytest.raises(ShowtimeNotFound):
        await world.seat_map(5)


async def test_the_amount_is_the_sum_of_each_seat_s_price_for_its_ticket_type(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime(layout=LAYOUT, prices=PRICES)
    cmd = HoldSeats(showtime_id=sid, customer_id=7, seats=["K2", "A5", "K1", "A1"],
                    ticket_types={"K2": "CHILD", "A5": "SENIOR"})
    hold = await hold_seats(cmd, world.deps)
    assert hold.tickets == (Ticket("A1", "ACCESSIBLE", "ADULT", 1200), Ticket("A5", "STANDARD", "SENIOR", 900),
                            Ticket("K1", "VIP", "ADULT", 1800), Ticket("K2", "VIP", "CHILD", 1300))
    assert hold.amount_cents == 1200 + 900 + 1800 + 1300
    assert (await get_hold(hold.hold_id, 7, world.deps)).tickets == hold.tickets
    (held,) = world.events()
    assert held.data.amountCents == hold.amount_cents


@pytest.mark.parametrize(("types", "error"), [({"K1": "SENIOR"}, UnpricedTickets), ({"K1": "PENSIONER"}, InvalidSeats)])
async def test_a_ticket_type_without_a_price_for_the_seat_s_category_holds_nothing(fakes, types, error) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime(layout=LAYOUT, prices=PRICES)
    with pytest.raises(error) as refused:
        await hold_seats(HoldSeats(showtime_id=sid, customer_id=7, seats=["K1", "A5"], ticket_types=types),
                         world.deps)
    assert refused.value.seats == ["K1"]
    assert set(world.seats(sid).values()) == {"AVAILABLE"} and world.events() == []


def test_two_requests_are_the_same_only_with_the_same_ticket_types() -> None:
    adult = HoldSeats(showtime_id=1, customer_id=2, seats=["F5", "F6"])
    assert adult.fingerprint() == HoldSeats(showtime_id=1, customer_id=2, seats=["F6", "F5"],
                                            ticket_types={"F5": "ADULT"}).fingerprint()
    assert adult.fingerprint() != HoldSeats(showtime_id=1, customer_id=2, seats=["F5", "F6"],
                                            ticket_types={"F5": "CHILD"}).fingerprint()


async def test_the_seat_map_carries_categories_places_and_prices(fakes) -> None:
    world = fakes.fake_deps()
    sid = await world.showtime(layout=LAYOUT, prices=PRICES)
    shown = await world.seat_map(sid)
    assert shown["prices"] == PRICES
    assert shown["seats"][2] == {"code": "A3", "status": "AVAILABLE", "category": "COMPANION", "row": "A", "x": 5}
