"""Pure domain rules: what a valid hold request and a valid seat layout are."""

from __future__ import annotations

import pytest
from hold_service.domain.errors import InvalidSeats
from hold_service.domain.hall import rows_hall
from hold_service.domain.model import HoldSeats, requested_seats


def test_requested_seats_are_sorted_for_lock_order() -> None:
    assert requested_seats(["F6", "F5", "A10"], 8) == ["A10", "F5", "F6"]


@pytest.mark.parametrize("seats", [[], [f"A{i}" for i in range(1, 10)], ["A1", "A1"], ["a1"], ["A0"], ["1A"]])
def test_invalid_requests(seats: list[str]) -> None:
    with pytest.raises(InvalidSeats):
        requested_seats(seats, 8)


def test_seat_codes_and_fingerprint() -> None:
    assert [p.code for p in rows_hall({"A": 2, "B": 1})] == ["A1", "A2", "B1"]
    with pytest.raises(InvalidSeats):
        rows_hall({"a": 1})
    a = HoldSeats(showtime_id=1, customer_id=2, seats=["F6", "F5"])
    assert a.fingerprint() == HoldSeats(showtime_id=1, customer_id=9, seats=["F5", "F6"]).fingerprint()
