"""The demo's parts without the platform: the CHECKED table's rules on hand-made facts (a failed row makes the
exit status 1), the waiting-room hook against a stand-in of the room's contract (docs/api), and where the
customers come from (a few to each loopback address, every call of a customer from his own)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..e2e.customers import Shop
from ..e2e.saga import Verdict
from ..e2e.saga.facts import Facts
from ..e2e.saga.history import History
from ..e2e.saga.quiesce import Rest
from ..e2e.saga.scope import Scope
from ..e2e.saga.verdict import Check
from . import queue, server_figures
from .addresses import BLOCK_HOSTS, Block, Clients, deal
from .crowd import plans
from .platform import Platform
from .sale import Sale, SaleConfig, SeatCounts
from .shoppers import SaleCustomer
from .table import ROOMS_CHECK, judge, rooms_row

VOUCHER = "FLASHX"


def sold_out_facts() -> Facts:
    """Two seats, both BOOKED by known customers, one with the voucher; a late payer refunded."""
    f = Facts()
    f.seats = [{"seat_code": "A1", "status": "BOOKED", "booking_id": "b1"},
               {"seat_code": "A2", "status": "BOOKED", "booking_id": "b2"}]
    f.bookings = {"b1": {"booking_id": "b1", "customer_id": 1, "status": "BOOKED", "payment_id": "p1",
                         "tickets": [{"seat": "A1", "ticketType": "CHILD"}]},
                  "b2": {"booking_id": "b2", "customer_id": 2, "status": "BOOKED", "payment_id": "p2",
                         "tickets": [{"seat": "A2", "ticketType": "ADULT"}]},
                  "b3": {"booking_id": "b3", "customer_id": 3, "status": "EXPIRED", "payment_id": None}}
    f.payments = {"p1": {"payment_id": "p1", "booking_id": "b1", "voucher_code": VOUCHER, "discount_cents": 300,
                         "status": "SUCCEEDED"},
                  "p2": {"payment_id": "p2", "booking_id": "b2", "voucher_code": None, "discount_cents": 0,
                         "status": "SUCCEEDED"},
                  "p3": {"payment_id": "p3", "booking_id": "b3", "voucher_code": None, "discount_cents": 0,
                         "status": "REFUNDED"}}
    f.sessions = {f"s{i}": {"reference": f"p{i}", "status": "paid"} for i in (1, 2, 3)}
    f.vouchers = {VOUCHER: {"code": VOUCHER, "total_limit": 1, "used_count": 1}}
    f.redemptions = [{"voucher_code": VOUCHER, "customer_id": 1, "order_id": "p1", "status": "CONFIRMED"}]
    f.contacts = {1, 2}
    f.mail = [{"booking": "b1", "kind": "ticket"}, {"booking": "b2", "kind": "ticket"}]
    return f


def table_of(facts: Facts, expiry_plays: bool = True) -> list[str]:
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=facts, checks=[])
    t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=expiry_plays, hold_ttl=600)
    return [r.check for r in t.failed]


def test_a_sold_out_sale_passes_every_row() -> None:
    assert table_of(sold_out_facts()) == []
    assert table_of(sold_out_facts(), expiry_plays=False) == []


def test_each_broken_rule_fails_its_row() -> None:
    unsold = sold_out_facts()
    unsold.seats[1]["status"] = "AVAILABLE"
    assert table_of(unsold) == ["seats sold = capacity"]

    over_limit = sold_out_facts()
    over_limit.vouchers[VOUCHER]["used_count"] = 2
    assert table_of(over_limit) == ["voucher uses <= limit"]

    kept_money = sold_out_facts()
    kept_money.payments["p3"]["status"] = "SUCCEEDED"
    assert table_of(kept_money) == ["every late payment refunded"]

    lost_mail = sold_out_facts()
    lost_mail.mail.pop()
    assert table_of(lost_mail) == ["e-mails sent = bookings of known customers"]


def cancelled_facts() -> Facts:
    """b2 was booked, then cancelled by its customer: its seat is free again, its payment refunded."""
    f = sold_out_facts()
    f.seats[1].update(status="AVAILABLE", booking_id=None)
    f.bookings["b2"]["status"] = "CANCELLED"
    f.payments["p2"]["status"] = "REFUNDED"
    f.events = [{"eventId": "e1", "type": "BookingCancelled", "bookingId": "b2",
                 "data": {"paymentId": "p2", "reason": "CUSTOMER", "seats": ["A2"]}}]
    f.mail.append({"booking": "b2", "kind": "cancellation"})
    return f


def test_cancellations_get_their_row_and_still_count_their_tickets() -> None:
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=cancelled_facts(), checks=[])
    t = judge(verdict, capacity=1, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    rows = {r.check: r for r in t.rows}
    assert not t.failed, t.failed
    assert rows["cancelled bookings refunded once"].figure.startswith(
        "1 cancelled (1 by their customers): refunded 1, cancellation e-mails in the sink 1 (customers with an "
        "address 1); their 1 seats back on "
        "sale, 0 sold again, 0 still theirs")
    assert rows["e-mails sent = bookings of known customers"].figure == "2 = 2"  # b2's ticket still counts
    unrefunded = cancelled_facts()
    unrefunded.payments["p2"]["status"] = "SUCCEEDED"
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=unrefunded, checks=[])
    t = judge(verdict, capacity=1, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    assert [r.check for r in t.failed] == ["cancelled bookings refunded once"]
    still_held = cancelled_facts()  # the cancellation did not give the seat back
    still_held.seats[1].update(status="BOOKED", booking_id="b2")
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=still_held, checks=[])
    t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    assert [r.check for r in t.failed] == ["cancelled bookings refunded once"]
    sold_again = cancelled_facts()  # another customer bought the seat given back
    sold_again.seats[1].update(status="BOOKED", booking_id="b4")
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=sold_again, checks=[])
    t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    assert not t.failed and "1 sold again, 0 still theirs" in {r.check: r for r in t.rows}[
        "cancelled bookings refunded once"].figure
    # No booking cancelled: the row is a figure saying what the part's customers did, not a check.
    history = History()
    history.journey(7, "cancels booking").notes.append("kept_booking_sold_out")
    none = {r.check: r for r in judge(
        Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=sold_out_facts(), checks=[], history=history), capacity=2,
        voucher=VOUCHER, voucher_limit=1, late_journeys=[], steps={}, expiry_plays=False, hold_ttl=600).rows}
    assert (none["cancelled bookings refunded once"].ok, none["cancelled bookings refunded once"].figure) == (
        None, 'no booking cancelled in this sale; the customers of "cancels booking": kept_booking_sold_out 1')


def test_the_tickets_row_counts_types_and_fails_on_amounts_other_than_their_prices() -> None:
    priced = Check("prices.amounts_are_tickets", "", checked=3)
    verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=sold_out_facts(), checks=[priced])
    t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    row = {r.check: r for r in t.rows}["tickets priced as the showtime prices"]
    assert row.ok is True and row.figure == "ADULT 1, CHILD 1; amounts other than their tickets' prices 0"
    priced.violations.append("booking b1: hold amount 1200, its tickets sum to 800")
    t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
              steps={}, expiry_plays=True, hold_ttl=600)
    assert [r.check for r in t.failed] == ["tickets priced as the showtime prices", "every saga invariant (1)"]


def test_a_cancelled_booking_s_discount_is_not_counted_against_the_voucher_s_limit() -> None:
    """b2 was paid with the voucher's one use, then cancelled (its use released); b1 got the use after it."""
    f = cancelled_facts()
    f.payments["p2"].update(voucher_code=VOUCHER, discount_cents=300)
    f.redemptions.append({"voucher_code": VOUCHER, "customer_id": 2, "order_id": "p2", "status": "RELEASED"})
    t = judge(Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=f, checks=[]), capacity=1, voucher=VOUCHER,
              voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}], steps={}, expiry_plays=True, hold_ttl=600)
    row = {r.check: r for r in t.rows}["voucher uses <= limit"]
    assert row.ok and "discounted bookings 1;" in row.figure, row


class StandInRoom:
    """hold-service's waiting room as its contract states it, served through httpx's transport hook:
    the queue admits a ticket on its `admit_after`-th poll; a hold needs the token the room gave."""

    def __init__(self, *, routes: bool = True, admit_after: int = 2, sold_out: bool = False) -> None:
        self.routes, self.admit_after, self.sold_out = routes, admit_after, sold_out
        self.polls: dict[str, int] = {}
        self.tokens: set[str] = set()
        self.holds_seen: list[str | None] = []
        self.configured: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path.endswith("/seats") and method == "GET":
            return httpx.Response(200, json={"version": 1, "seats": [{"code": "A1", "status": "AVAILABLE"},
                                                                     {"code": "A2", "status": "AVAILABLE"}]})
        if path.endswith("/holds") and method == "POST":
            token = request.headers.get(queue.TOKEN_HEADER)
            self.holds_seen.append(token)
            if token not in self.tokens:
                return httpx.Response(403, json={"error": "ADMISSION_REQUIRED", "message": "join the queue"})
            return httpx.Response(201, json={"holdId": "h1", "bookingId": "b1", "seats": ["A1"],
                                             "expiresAt": "2031-01-01T00:00:00Z", "amountCents": 1200})
        if not self.routes:
            return httpx.Response(404, json={"error": "NOT_FOUND", "message": "Not Found"})
        if path.endswith("/waiting-room") and method == "PUT":
            self.configured.append(json.loads(request.content))
            return httpx.Response(200, json={"enabled": True, "queueLength": 0})
        if path.endswith("/queue") and method == "POST":
            ticket = f"t{len(self.polls)}"
            self.polls[ticket] = 0
            return httpx.Response(202, json={"ticket": ticket, "position": 5, "soldOut": self.sold_out,
                                             "opensAt": None})
        if path.startswith("/queue/"):
            ticket = path.rsplit("/", 1)[1]
            self.polls[ticket] += 1
            if self.polls[ticket] < self.admit_after:
                return httpx.Response(200, json={"admitted": False, "position": 1, "estimatedWaitSeconds": 1})
            self.tokens.add(f"adm-{ticket}")
            return httpx.Response(200, json={"admitted": True, "admissionToken": f"adm-{ticket}",
                                             "position": 0, "soldOut": False})
        return httpx.Response(404, json={"error": "NOT_FOUND", "message": "Not Found"})


def customer_in(room: StandInRoom, client: httpx.AsyncClient, waiting_room: bool = True) -> SaleCustomer:
    platform = Platform(name="stand-in", url={"hold": "http://hold", "pay": "http://pay", "voucher": "http://v",
                                              "sim": "http://sim"}, dsn={}, jwt_secret="x" * 32, bootstrap="",
                        group_prefix="", mail_dir=Path("/nonexistent"))
    sale = Sale(cfg=SaleConfig(showtimes=1, seats=2, waiting_room=waiting_room), platform=platform)
    sale.catalogue.showtimes[42] = ["A1", "A2"]
    sale.seats[42] = SeatCounts(available=2)
    sale.deadline = time.monotonic() + 30
    shop = Shop(url=platform.url, client=client, history=sale.history, jwt_secret=platform.jwt_secret, hold_ttl=30)
    shop.wave = sale.catalogue
    return SaleCustomer(sale, shop, 0, 7)


async def test_a_customer_queues_then_holds_with_the_admission_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "POLL_SECONDS", (0.01, 0.01))
    room = StandInRoom(admit_after=3)
    async with httpx.AsyncClient(transport=httpx.MockTransport(room)) as client:
        await queue.open_room(client, "http://hold", {}, 42, active_limit=10)
        c = customer_in(room, client)
        j = c.shop.history.journey(c.id, "pays")
        assert await c.enter(j, random.Random(1))
        hold = await c.take_hold(j, random.Random(1))
    assert room.configured == [{"enabled": True, "activeLimit": 10}]
    assert hold is not None and hold["holdId"] == "h1"
    assert room.holds_seen == ["adm-t0"] and room.polls == {"t0": 3}
    assert [op["f"] for op in c.shop.history.ops if op["type"] == "ok"] == \
        ["queue_join", "queue_poll", "queue_poll", "queue_poll", "seat_map", "hold"]


async def test_without_a_room_no_token_is_sent_and_a_missing_room_stops_the_demo() -> None:
    room = StandInRoom(routes=False)
    async with httpx.AsyncClient(transport=httpx.MockTransport(room)) as client:
        with pytest.raises(queue.RoomMissing):
            await queue.open_room(client, "http://hold", {}, 42, active_limit=10)
        c = customer_in(room, client, waiting_room=False)
        j = c.shop.history.journey(c.id, "pays")
        assert await c.enter(j, random.Random(1))
        assert await c.take_hold(j, random.Random(1)) is None  # the stand-in wants a token; none was sent
    assert room.holds_seen[0] is None


async def test_a_sold_out_room_sends_the_customer_away() -> None:
    room = StandInRoom(sold_out=True)
    async with httpx.AsyncClient(transport=httpx.MockTransport(room)) as client:
        c = customer_in(room, client)
        j = c.shop.history.journey(c.id, "pays")
        assert not await c.enter(j, random.Random(1))
    assert "sold_out" in j.notes and room.holds_seen == []


# --- where the customers come from ----------------------------------------------------------------------------

def test_customers_are_dealt_few_to_an_address_each_address_in_one_process() -> None:
    block = Block(77)
    dealt = deal(block, [1000, 1000], per_address=4)
    owners = Counter(a for own in dealt for a in own)
    assert [len(own) for own in dealt] == [1000, 1000]
    assert len(owners) == 500 and max(owners.values()) == 4
    assert not set(dealt[0]) & set(dealt[1])  # an address's connections belong to one process
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network("127.77.0.0/16") for a in owners)
    assert block.organizer not in owners and "127.0.0.1" not in owners
    assert deal(block, [3, 2], per_address=2000) == [[block.address(0)] * 3, [block.address(1)] * 2]
    with pytest.raises(ValueError):
        deal(block, [BLOCK_HOSTS + 1], per_address=1)


def test_the_sale_deals_its_customers_over_the_processes_and_addresses() -> None:
    platform = Platform(name="stand-in", url={}, dsn={}, jwt_secret="x" * 32, bootstrap="", group_prefix="",
                        mail_dir=Path("/nonexistent"))
    sale = Sale(cfg=SaleConfig(customers=2000, processes=2), platform=platform)
    sale.customers = list(range(1, 2001))
    worker_plans = plans(sale)
    everyone = [c for plan in worker_plans for c in plan.customers]
    assert sorted(c[1] for c in everyone) == sale.customers
    assert len(sale.addresses) == 500 and set(sale.addresses.values()) == {4}
    assert Counter(c[4] for c in everyone) == sale.addresses


async def test_a_client_of_an_address_connects_from_that_address() -> None:
    peers: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer.get_extra_info("peername")[0])
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, Clients(keepalive=1) as clients:
        for address in ("127.77.0.1", "127.77.3.200"):
            assert (await clients.of(address).get(f"http://127.0.0.1:{port}/")).status_code == 204
    assert peers == ["127.77.0.1", "127.77.3.200"]


async def test_every_call_of_a_customer_goes_through_his_own_client() -> None:
    def elsewhere(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"{request.method} {request.url} left by the shop's client")

    room = StandInRoom(admit_after=1)
    async with httpx.AsyncClient(transport=httpx.MockTransport(elsewhere)) as shared, \
            httpx.AsyncClient(transport=httpx.MockTransport(room)) as own:
        c = customer_in(room, shared)
        c = SaleCustomer(c.sale, c.shop, 0, 7, own)
        j = c.shop.history.journey(c.id, "pays")
        assert await c.enter(j, random.Random(1))  # joins and polls the room
        assert await c.take_hold(j, random.Random(1)) is not None  # reads the map and holds
        assert await c.hold_status(j) is None  # a paying customer's call (the stand-in has no such route)
    assert [op["f"] for op in c.shop.history.ops if op["type"] != "invoke"] == \
        ["queue_join", "queue_poll", "seat_map", "hold", "hold_status"]


def test_the_address_row_fails_on_a_refusal_by_address() -> None:
    crowd = Counter({"127.77.0.1": 4, "127.77.0.2": 3})

    def row(refused: dict[str, int] | None) -> tuple[str, bool | None]:
        verdict = Verdict(scope=Scope(), rest=Rest(True, 0.0), facts=sold_out_facts(), checks=[])
        t = judge(verdict, capacity=2, voucher=VOUCHER, voucher_limit=1, late_journeys=[{"payment_ids": ["p3"]}],
                  steps={}, expiry_plays=True, hold_ttl=600, addresses=crowd, refused=refused)
        found = [r for r in t.rows if r.check == "holds refused by address = 0"]
        return found[0].figure, found[0].ok

    figure, ok = row({"address": 0, "customer": 12})
    assert ok is True and "refused 0 by address" in figure and "12 by customer" in figure
    assert "from 2 addresses, at most 4 per address" in figure
    assert row({"address": 3, "customer": 0})[1] is False
    assert row(None)[1] is False  # not read: not known to be none


async def test_a_metrics_page_that_does_not_answer_at_once_is_asked_again() -> None:
    """Right after the sale hold-service can be too busy to answer /metrics within the read's 10 s; the
    closing table must not then call its refusals by limit unread."""
    asked: Counter[str] = Counter()

    def answer(request: httpx.Request) -> httpx.Response:
        asked[request.url.host] += 1
        if request.url.host == "hold" and asked["hold"] == 1:
            raise httpx.ReadTimeout("busy", request=request)
        return httpx.Response(200, text='ticketing_hold_rate_limited_total{limit="address"} 0.0\n')

    urls = {"hold": "http://hold", "voucher": "http://voucher", "pay": "http://pay", "sim": "http://sim"}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        figures = await server_figures.snapshot(client, urls)
    assert figures.unread == [] and asked["hold"] == 2 and figures.refused == {"address": 0.0}


def test_the_rooms_row_passes_only_rooms_that_opened_themselves_and_closed_after() -> None:
    """--waiting-room auto's row, from the topic's WaitingRoomOpened / WaitingRoomClosed of each showtime."""
    from datetime import UTC, datetime

    def event(kind: str, showtime: int, reason: str, second: int) -> dict[str, Any]:
        return {"type": f"WaitingRoom{kind}", "showtimeId": showtime, "data": {"reason": reason, "activeLimit": 8},
                "occurredAt": f"2031-01-01T20:00:{second:02d}Z"}

    start = datetime(2031, 1, 1, 20, 0, tzinfo=UTC)
    good = Facts(events=[event("Opened", 1, "ARRIVALS", 3), event("Closed", 1, "RUSH_OVER", 50),
                         event("Opened", 2, "ACTIVE", 4), event("Closed", 2, "RUSH_OVER", 51)])
    row = rooms_row(good, [1, 2], start)
    assert row.check == ROOMS_CHECK and row.ok is True
    assert row.figure == ("1: opened (ARRIVALS) at +3.0 s, closed (RUSH_OVER) at +50.0 s; "
                          "2: opened (ACTIVE) at +4.0 s, closed (RUSH_OVER) at +51.0 s")
    still_open = Facts(events=[event("Opened", 1, "ARRIVALS", 3)])
    by_hand = Facts(events=[event("Opened", 1, "OPERATOR", 3), event("Closed", 1, "RUSH_OVER", 50)])
    for facts in (still_open, by_hand, Facts(events=[])):
        assert rooms_row(facts, [1], start).ok is False
    assert rooms_row(Facts(events=[]), [1], start).figure == "1: never opened"
    assert rooms_row(good, [1], start, check=False).ok is None  # a sale that did not ask for it: a figure
