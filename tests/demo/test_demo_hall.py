"""The demo's hall and its new customers without the platform: the showtimes are created in the full hall form
hold-service accepts, customers ask for ticket types the showtime prices, and a customer who cancels his
booking does so only while the sale still has a seat unsold besides his (against a stand-in of the contract)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from hold_service.domain.hall import layout_hall

from ..e2e.customers import Shop
from . import hall
from .cancellers import UNSOLD_TO_CANCEL, book_then_cancel
from .platform import Platform
from .sale import PARTS, Sale, SaleConfig, SeatCounts
from .shoppers import SaleCustomer


def test_the_sale_s_hall_has_categories_an_aisle_and_a_price_for_each_category() -> None:
    small = hall.categories_for(12)
    assert small == {**{f"A{n}": "ACCESSIBLE" for n in (1, 2)}, **{f"A{n}": "COMPANION" for n in (3, 4)},
                     **{f"A{n}": "STANDARD" for n in range(5, 13)}}
    layout = hall.layout_for(100)
    assert [r["row"] for r in layout] == ["A", "B", "C", "D", "E"]
    categories = hall.categories_of(layout)
    assert len(categories) == 100 and Counter(categories.values()) == {"STANDARD": 76, "VIP": 20, "ACCESSIBLE": 2,
                                                                        "COMPANION": 2}
    # hold-service's own reading of the layout: the same seats and categories, the aisle in the drawing
    places = layout_hall(layout)
    assert {p.code: p.category for p in places} == categories
    assert [p.x for p in places if p.row == "B"] == [*range(1, 11), *range(13, 23)]
    assert all("ADULT" in hall.PRICES[c] for c in set(categories.values()))
    body = hall.showtime_body(7, "Flash sale 1", 12)
    assert "rows" not in body and "priceCents" not in body and body["layout"] == hall.layout_for(12)


def test_customers_ask_for_other_ticket_types_only_where_the_showtime_prices_them() -> None:
    categories = hall.categories_for(100)
    asked = [t for k in range(200) for t in hall.tickets_for(sorted(categories), categories, random.Random(k))
             if isinstance(t, dict)]
    kinds = Counter(t["ticketType"] for t in asked)
    assert {"CHILD", "SENIOR", "STUDENT"} <= set(kinds) and "ADULT" not in kinds
    assert all(t["ticketType"] in hall.PRICES[categories[t["code"]]] for t in asked)
    assert not any(categories[t["code"]] == "COMPANION" for t in asked)  # it prices ADULT alone


class StandInShop:
    """hold-service, payment-service and the simulator as the contract answers one customer who books A1 and
    cancels: `unsold` seats of his showtime besides his are not BOOKED, and `elsewhere` of the sale's other one."""

    def __init__(self, unsold: int, elsewhere: int = 0) -> None:
        self.unsold, self.elsewhere = unsold, elsewhere
        self.holds: list[Any] = []
        self.cancelled: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path == "/showtimes/42/seats":
            seats = [{"code": "A1", "status": "BOOKED" if self.holds else "AVAILABLE"}] + [
                {"code": f"A{n}", "status": "HELD" if n % 2 else "AVAILABLE"} for n in range(2, 2 + self.unsold)]
            return httpx.Response(200, json={"version": 3, "seats": [*seats, {"code": "B1", "status": "BOOKED"}]})
        if path == "/showtimes/43/seats":
            seats = [{"code": f"A{n}", "status": "BOOKED" if n > self.elsewhere else "AVAILABLE"} for n in (1, 2, 3)]
            return httpx.Response(200, json={"version": 9, "seats": seats})
        if path == "/showtimes/42/holds" and method == "POST":
            self.holds.append(json.loads(request.content)["seats"])
            return httpx.Response(201, json={"holdId": "h1", "bookingId": "b1", "seats": ["A1"], "amountCents": 800,
                                             "expiresAt": "2031-01-01T00:00:00Z"})
        if path == "/holds/h1/checkout":
            return httpx.Response(201, json={"paymentId": "p1", "redirectUrl": "http://sim/pay/cs_1",
                                             "discountCents": 0, "amountCents": 800})
        if path in ("/sim/sessions/cs_1/pay", "/pay/cs_1"):
            return httpx.Response(200, json={"status": "paid"})
        if path == "/holds/h1":
            return httpx.Response(200, json={"holdId": "h1", "status": "BOOKED", "seats": ["A1"]})
        if path == "/bookings/b1/cancel" and method == "POST":
            self.cancelled.append("b1")
            return httpx.Response(202, json={"bookingId": "b1", "status": "CANCELLED"})
        return httpx.Response(404, json={"error": "NOT_FOUND", "message": "Not Found"})


def customer_at(client: httpx.AsyncClient) -> SaleCustomer:
    platform = Platform(name="stand-in", url={"hold": "http://hold", "pay": "http://pay", "voucher": "http://v",
                                              "sim": "http://sim"}, dsn={}, jwt_secret="x" * 32, bootstrap="",
                        group_prefix="", mail_dir=Path("/nonexistent"))
    sale = Sale(cfg=SaleConfig(showtimes=1, seats=2), platform=platform)
    sale.catalogue.showtimes.update({42: ["A1", "A2"], 43: ["A1", "A2", "A3"]})
    sale.seats[42] = SeatCounts(available=2)
    shop = Shop(url=platform.url, client=client, history=sale.history, jwt_secret=platform.jwt_secret, hold_ttl=30)
    shop.wave = sale.catalogue
    c = SaleCustomer(sale, shop, 0, 7)
    c.showtime = 42
    return c


async def test_a_customer_books_then_cancels_while_his_showtime_still_sells() -> None:
    assert PARTS["cancels booking"].steps == (book_then_cancel,)
    shop = StandInShop(unsold=UNSOLD_TO_CANCEL)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        j = c.shop.history.journey(c.id, "cancels booking")
        await book_then_cancel(c, j, random.Random(3))
    assert shop.cancelled == ["b1"] and "cancelled_booking" in j.notes
    assert [op["f"] for op in c.shop.history.ops if op["type"] == "ok"][-3:] == \
        ["hold_status", "seat_map", "booking_cancel"]


async def test_a_customer_cancels_while_another_showtime_of_the_sale_still_sells() -> None:
    shop = StandInShop(unsold=0, elsewhere=UNSOLD_TO_CANCEL)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        j = c.shop.history.journey(c.id, "cancels booking")
        await book_then_cancel(c, j, random.Random(3))
    assert shop.cancelled == ["b1"]
    assert [op["value"].get("showtime") for op in c.shop.history.ops if op["type"] == "ok"
            and op["f"] == "seat_map"][-2:] == [42, 43]


async def test_a_customer_keeps_his_booking_when_the_sale_is_nearly_sold_out() -> None:
    shop = StandInShop(unsold=UNSOLD_TO_CANCEL - 1, elsewhere=UNSOLD_TO_CANCEL - 1)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        j = c.shop.history.journey(c.id, "cancels booking")
        await book_then_cancel(c, j, random.Random(3))
    assert shop.cancelled == [] and "kept_booking_nearly_sold_out" in j.notes


def test_best_available_customers_ask_ticket_types_the_category_prices_one_per_seat() -> None:
    rng = random.Random(7)
    asked = {category: [hall.ticket_types_for(3, category, rng) for _ in range(40)] for category in hall.PRICES}
    assert all(len(types) == 3 for lists in asked.values() for types in lists)
    for category, lists in asked.items():
        kinds = {t for types in lists for t in types}
        priced = set(hall.PRICES[category])
        assert "ADULT" in kinds and kinds <= priced and (kinds - {"ADULT"} or priced == {"ADULT"}), (category, kinds)


async def test_the_sale_s_customers_send_ticket_types_with_their_holds() -> None:
    shop = StandInShop(unsold=4)
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        for k in range(30):
            await c.take_hold(c.shop.history.journey(c.id, "pays"), random.Random(k))
    asked = [seat for hold in shop.holds for seat in hold]
    assert any(isinstance(s, dict) and s["ticketType"] in ("CHILD", "SENIOR", "STUDENT") for s in asked)
    assert any(isinstance(s, str) for s in asked)  # ADULT tickets are plain codes


class LostAnswerShop(StandInShop):
    """The stand-in whose first hold request is taken but its answer lost (the client's timeout)."""

    def __init__(self) -> None:
        super().__init__(unsold=4)
        self.keys: list[str | None] = []
        self.taken: dict[str, httpx.Response] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/showtimes/42/holds" and request.method == "POST":
            key = request.headers.get("idempotency-key")
            self.keys.append(key)
            if key in self.taken:  # the same key: the hold it took, answered again
                return self.taken[key]
            answer = super().__call__(request)
            self.taken[str(key)] = answer
            if len(self.keys) == 1:
                raise httpx.ReadTimeout("the answer was lost", request=request)
            return answer
        return super().__call__(request)


async def test_a_hold_asked_again_after_no_answer_is_the_same_hold() -> None:
    shop = LostAnswerShop()
    async with httpx.AsyncClient(transport=httpx.MockTransport(shop)) as client:
        c = customer_at(client)
        j = c.shop.history.journey(c.id, "pays")
        assert await c.take_hold(j, random.Random(3)) is not None
    assert len(shop.keys) == 2 and shop.keys[0] and shop.keys[0] == shop.keys[1]
    assert len(shop.holds) == 1 and j.hold_id == "h1"  # one hold taken, and it is the customer's
