"""The sale's best-available customers (best.py): what a customer asks and asks again, and the closing row."""

from __future__ import annotations

import random
from typing import Any

import httpx

from ..e2e.saga.facts import Facts
from ..e2e.saga.history import History
from .best import best_row, refusals_per_booking, take_best


class Asking:
    """A customer whose hold requests are answered from a list, recording what he sent."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers, self.sent = answers, []
        self.shop = type("Shop", (), {"wave": None, "url": {"hold": "http://hold"}})()

    def choose_showtime(self, wave: Any, rng: random.Random) -> int:
        return 7

    def hold_headers(self, showtime: int) -> dict[str, str]:
        return {}

    async def admission_refused(self, j: Any, showtime: int) -> bool:
        return False

    async def call(self, j: Any, f: str, method: str, url: str, **kw: Any) -> httpx.Response:
        self.sent.append((f, kw["json"]))
        status, body = self.answers.pop(0)
        return httpx.Response(status, json=body)


async def test_a_customer_with_no_run_together_asks_for_seats_apart() -> None:
    c = Asking([(409, {"error": "SEATS_UNAVAILABLE", "together": False}),
                (201, {"holdId": "h", "bookingId": "b", "seats": ["A1", "B1"]})])
    j = History().journey(1, "pays")
    assert (await take_best(c, j, random.Random(1)))["holdId"] == "h"  # type: ignore[arg-type,index]
    assert [f for f, _ in c.sent] == ["hold_best", "hold_best"]
    assert "together" not in c.sent[0][1]["best"] and c.sent[1][1]["best"]["together"] is False
    assert (j.hold_id, j.booking_id, j.showtime) == ("h", "b", 7)


async def test_three_refusals_and_he_leaves_without_a_hold() -> None:
    c = Asking([(409, {"together": False}), (409, {"together": False}), (409, {"seats": ["A1"]})])
    j = History().journey(1, "pays")
    assert await take_best(c, j, random.Random(1)) is None  # type: ignore[arg-type]
    assert j.notes == ["no_hold"]
    assert [body["best"].get("together") for _, body in c.sent] == [None, False, False]


def test_the_row_puts_409s_per_booking_of_each_kind_side_by_side() -> None:
    history = History()
    for n, (f, status) in enumerate([("hold", 409), ("hold", 409), ("hold", 201), ("hold_best", 201),
                                     ("hold_best", 409), ("hold", 409)]):
        history.ops.append({"type": "ok" if status == 201 else "fail", "process": "c", "f": f, "status": status,
                            "index": n})
    picker, chooser = history.journey(1, "pays"), history.journey(2, "pays")
    picker.booking_id, chooser.booking_id = "b1", "b2"
    chooser.notes.append("best_available")
    facts = Facts()
    facts.bookings = {"b1": {"status": "BOOKED", "payment_id": "p1"}, "b2": {"status": "CANCELLED", "payment_id": "p2"}}
    figures = refusals_per_booking(history, facts)
    assert figures == {"picking": (3, 1), "best available": (1, 1)}
    row = best_row(figures, 0.3)
    assert row.ok is None
    assert row.figure == ("best available 1.00 (1 409s / 1 bookings) vs picking 3.00 (3 409s / 1 bookings); "
                          "30% of customers ask for best available")
