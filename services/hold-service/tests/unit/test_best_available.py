"""Best available's pure parts: the seats' ranking, what a valid request is, and its answers' shapes. The choice
itself and the no-lone-seat rule live in SQL (sql/schema.sql) and are tested on PostgreSQL
(tests/integration/test_best_available.py, test_interleavings_best.py)."""

from __future__ import annotations

import pytest
from hold_service.domain.errors import InvalidSeats, LoneSeat, SeatsUnavailable
from hold_service.domain.hall import ROW_WEIGHT, layout_hall, ranked, row_ranks, rows_hall
from hold_service.domain.model import BestSeats, HoldSeats, outcome_from, outcome_record, requested_best
from hold_service.entrypoints.api.errors import api_error


def ranks(places: list) -> dict[str, int]:
    return {p.code: p.rank for p in places}


def test_rows_rank_from_the_middle_outwards_and_seats_from_the_centre_outwards() -> None:
    got = ranks(ranked(rows_hall({"A": 4, "B": 4, "C": 4, "D": 4, "E": 4})))
    by_row = {row: got[f"{row}1"] // ROW_WEIGHT for row in "ABCDE"}
    assert by_row["C"] < by_row["B"] == by_row["D"] < by_row["A"] == by_row["E"]
    assert got["C2"] == got["C3"] < got["C1"] == got["C4"]
    # a run is as good as the sum of its seats: any run of the middle row beats every run of the next
    assert sum(got[f"C{n}"] for n in (1, 2, 3)) < sum(got[f"B{n}"] for n in (2, 3))


def test_an_even_hall_has_two_middle_rows_and_gaps_count_in_a_rows_centre() -> None:
    got = ranks(ranked(rows_hall({"A": 2, "B": 2, "C": 2, "D": 2})))
    assert got["B1"] == got["C1"] < got["A1"] == got["D1"]
    aisle = layout_hall([{"row": "A", "blocks": [{"from": 1, "to": 2}, {"gap": 2}, {"from": 3, "to": 4}]}])
    centred = ranks(ranked(aisle))  # x 1, 2, 5, 6: the centre is the aisle
    assert centred["A2"] == centred["A3"] < centred["A1"] == centred["A4"]


def test_the_layout_may_rank_its_own_rows() -> None:
    layout = [{"row": "A", "blocks": [{"from": 1, "to": 2}], "rank": 1},
              {"row": "B", "blocks": [{"from": 1, "to": 2}]},
              {"row": "C", "blocks": [{"from": 1, "to": 2}], "rank": 3}]
    got = ranks(ranked(layout_hall(layout), row_ranks(layout)))
    assert got["A1"] < got["C1"] < got["B1"]  # the rows it ranks first, then the others from the middle


@pytest.mark.parametrize("best", [BestSeats(0), BestSeats(9), BestSeats(2, ticket_types=("ADULT",)),
                                  BestSeats(1, ticket_types=("PIRATE",))])
def test_a_bad_best_request_is_a_422(best: BestSeats) -> None:
    with pytest.raises(InvalidSeats):
        requested_best(best, 8)


def test_the_key_fingerprint_tells_best_requests_apart_from_each_other_and_from_picks() -> None:
    a = HoldSeats(showtime_id=1, customer_id=2, seats=[], best=BestSeats(2))
    assert a.fingerprint() != HoldSeats(showtime_id=1, customer_id=2, seats=[], best=BestSeats(3)).fingerprint()
    assert a.fingerprint() != HoldSeats(showtime_id=1, customer_id=2, seats=[],
                                        best=BestSeats(2, together=False)).fingerprint()
    assert a.fingerprint() != HoldSeats(showtime_id=1, customer_id=2, seats=["A1", "A2"]).fingerprint()


def test_the_409_shapes() -> None:
    none = api_error(SeatsUnavailable([], together=False))
    assert (none.status, none.code, none.details["together"], none.details["seats"]) == (409, "SEATS_UNAVAILABLE",
                                                                                          False, [])
    assert "together" not in api_error(SeatsUnavailable(["A1"])).details
    lone = api_error(LoneSeat(["F3"], ["F6", "F7"]))
    assert (lone.status, lone.code, lone.details) == (409, "LONE_SEAT", {"seats": ["F3"], "suggested": ["F6", "F7"]})
    replayed = outcome_from(outcome_record(SeatsUnavailable([], together=False)))
    assert isinstance(replayed, SeatsUnavailable) and replayed.together is False
