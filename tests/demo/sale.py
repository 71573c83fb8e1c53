"""The scripted flash sale: a catalogue, a cast of customers, a monitor; every call recorded in a History.

Customers arrive within the first seconds and race for a few showtimes through the public API. Each plays
one part for good (drawn by the seed), built from the saga run's journeys (tests/e2e/journeys.py):

    pays               hold, check out (a voucher half of the time), pay: page, callback, twice or delayed
    pays twice         the Pay button pressed twice at once, then a duplicated callback
    declines, retries  the card is declined; once FAILED, a new checkout of the same hold, paid
    pays late          paid in time but the callback comes after the session ended (the reconciler settles
                       it, the extended hold books it), or the Pay button pressed after the session ended
                       (the gateway refuses)
    abandons           cancels, or walks away after the hold or the checkout (the hold expires)
    cancels booking    pays, then cancels the booking: his seats go back on sale (cancellers.py)

The showtimes are halls with seat categories and prices by ticket type (hall.py); customers ask now and then
for a CHILD, SENIOR or STUDENT ticket where the seat's category has that price.

The flash voucher (small limit) is offered at checkout; who gets it first gets it. A customer who finds no
free seat waits and looks again (seats come back as holds end) until the sale is over: every seat BOOKED, or
the --seconds limit reached (the closing table says which). Parts that need a hold to expire (pays late,
walks away) play only when holds expire within the sale; on a `make up` stack with the production hold
time (600 s) those customers cancel instead, and so does any customer whose hold is still HELD when his
journey is over (shoppers.py), so the sale comes to rest; the closing table says so.

The customers themselves play in worker processes (crowd.py, shoppers.py); this module opens the sale and
keeps what the dashboard shows.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from ticketing.auth import issue_token

from ..e2e import journeys
from ..e2e.customers import Catalogue, seconds_until
from ..e2e.saga.history import History
from ..e2e.saga.scope import Scope
from . import hall, queue
from .addresses import Block, draw_block
from .cancellers import book_then_cancel
from .ending import SaleEnd
from .platform import Platform

PRICE_CENTS = 1200  # the hold-TTL probe's one seat
EXPIRY_PLAYS_UP_TO = 60.0  # seconds: longer holds would keep seats from the sale too long to let them lapse
Step = journeys.Step


def cores() -> int:
    return len(os.sched_getaffinity(0))


@dataclass(frozen=True)
class SaleConfig:
    customers: int = 2000
    showtimes: int = 3
    seats: int = 100  # per showtime
    seconds: float = 300.0  # the limit: no journey starts after it; the sale ends sooner when every seat is BOOKED
    arrival_seconds: float = 5.0  # customers arrive spread over this
    voucher_limit: int = 20
    known_share: float = 2 / 3  # customers with an e-mail address in the notifier
    best_share: float = 0.3  # customers who ask for the best seats available instead of picking (best.py)
    waiting_room: bool = False  # --waiting-room (on): the operator puts every showtime behind a room
    room_auto: bool = False  # --waiting-room auto: no operator action, the rooms open and close themselves
    active_limit: int = 150  # customers choosing seats at once per showtime, with --waiting-room
    connections: int = 200  # HTTP connections of all the customer processes together
    customers_per_address: int = 4  # customers sharing one source address at most (addresses.py)
    processes: int = 0  # customer processes; 0: one per core
    seed: int = 1

    @property
    def capacity(self) -> int:
        return self.showtimes * self.seats

    @property
    def workers(self) -> int:
        return max(1, min(self.processes or cores(), self.customers))


@dataclass(frozen=True)
class Part:
    name: str
    weight: float
    steps: tuple[Step, ...]  # one drawn per journey
    needs_expiry: bool = False  # plays only when holds expire within the sale


CAST = (
    Part("pays", 50, (journeys.book,)),
    Part("pays twice", 8, (journeys.pay_twice,)),
    Part("declines, retries", 12, (journeys.decline_then_retry,)),
    Part("pays late", 10, (journeys.late_callback, journeys.late_callback, journeys.pay_late), needs_expiry=True),
    Part("abandons", 12, (journeys.cancel, journeys.never_pay), needs_expiry=True),
    Part("cancels booking", 22, (book_then_cancel,)),
)
PARTS = {p.name: p for p in CAST}
FALLBACK: dict[str, tuple[Step, ...]] = {"abandons": (journeys.cancel,), "pays late": (journeys.cancel,)}


def cast_for(rng: random.Random) -> Part:
    return rng.choices(CAST, weights=[p.weight for p in CAST])[0]


@dataclass
class SeatCounts:
    available: int = 0
    held: int = 0
    booked: int = 0
    version: int = 0


@dataclass
class Sale:
    """Everything the dashboard shows and the closing table judges; each customer process keeps one too (its
    customers read the seat counts and the deadline from it)."""

    cfg: SaleConfig
    platform: Platform
    history: History = field(default_factory=History)
    catalogue: Catalogue = field(default_factory=Catalogue)
    voucher: str = ""
    customers: list[int] = field(default_factory=list)
    known: set[int] = field(default_factory=set)
    parts: Counter[str] = field(default_factory=Counter)  # customers per part
    hold_ttl: float = 0.0
    expiry_plays: bool = True
    seats: dict[int, SeatCounts] = field(default_factory=dict)  # showtime -> last seat-map counts
    rooms: dict[int, dict[str, Any]] = field(default_factory=dict)  # showtime -> the room's figures
    arrived: int = 0
    shopping: int = 0
    done: int = 0
    started: float = 0.0
    ended: float = 0.0
    sold_out: asyncio.Event = field(default_factory=asyncio.Event)
    end: SaleEnd = field(default_factory=SaleEnd)  # the sold-out decision shared by the processes (ending.py)
    deadline: float = 0.0
    stop: Any = None  # a multiprocessing Event: the parent ends the sale early (interrupted)
    lags: list[Any] = field(default_factory=list)  # each customer process's event-loop lag (crowd.LoopLag)
    server: dict[str, Any] = field(default_factory=dict)  # step -> the services' figures (server_figures)
    server_unread: list[str] = field(default_factory=list)  # services whose /metrics did not answer
    ending: str = ""  # how the sale ended: sold out, its limit, or every customer gone
    # Browsing calls in flight at most (its share of --connections): httpx's pool scans every queued request
    # per answer, so thousands queued in it cost the process more than the platform's answers.
    in_flight: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(200))
    slot_waits: list[float] = field(default_factory=list)  # how long each browsing call waited for a connection
    block: Block = field(default_factory=draw_block)  # the run's loopback addresses (addresses.py)
    addresses: Counter[str] = field(default_factory=Counter)  # customers per source address
    refused: dict[str, int] | None = None  # hold-service's refusals by limit over the sale (None: not read)

    @property
    def scope(self) -> Scope:
        return Scope(showtimes=set(self.catalogue.showtimes), vouchers={self.voucher})

    def free_showtimes(self) -> list[int]:
        return sorted(s for s, c in self.seats.items() if c.available > 0)

    def booked(self) -> int:
        return sum(c.booked for c in self.seats.values())


def admin_headers(platform: Platform) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(platform.jwt_secret, sub='1', role='admin')}"}


async def measure_hold_ttl(client: httpx.AsyncClient, platform: Platform, admin: dict[str, str], base: int) -> float:
    """Hold one seat of a one-seat probe showtime (outside the sale) and read how long holds last here."""
    showtime = base + 99
    r = await client.post(f"{platform.url['hold']}/admin/showtimes", headers=admin, json={
        "showtimeId": showtime, "title": "demo: hold TTL probe", "startsAt": "2031-01-01T20:00:00Z",
        "priceCents": PRICE_CENTS, "rows": {"A": 1}})
    r.raise_for_status()
    token = issue_token(platform.jwt_secret, sub=str(base % 10**12 + 7), role="customer")
    auth = {"Authorization": f"Bearer {token}"}
    r = await client.post(f"{platform.url['hold']}/showtimes/{showtime}/holds", headers=auth, json={"seats": ["A1"]})
    if r.status_code == 403 and "ADMISSION" in r.text:
        return 0.0  # a hold-service whose rooms are on by default: the sale's holds tell
    r.raise_for_status()
    ttl = seconds_until(r.json()["expiresAt"])
    await client.delete(f"{platform.url['hold']}/holds/{r.json()['holdId']}", headers=auth)
    return max(0.0, ttl)


async def open_sale(sale: Sale, client: httpx.AsyncClient) -> None:
    """The showtimes, the flash voucher, the customers (two in three known to the notifier), the rooms."""
    cfg, platform = sale.cfg, sale.platform
    admin = admin_headers(platform)
    base = (10**9 + uuid.uuid4().int % 10**9) * 1000
    sale.hold_ttl = await measure_hold_ttl(client, platform, admin, base)
    sale.expiry_plays = 0 < sale.hold_ttl <= min(EXPIRY_PLAYS_UP_TO, cfg.seconds / 2)
    seats = list(hall.categories_for(cfg.seats))
    for k in range(cfg.showtimes):
        showtime = base + k
        r = await client.post(f"{platform.url['hold']}/admin/showtimes", headers=admin,
                              json=hall.showtime_body(showtime, f"Flash sale {k + 1}", cfg.seats))
        r.raise_for_status()
        sale.catalogue.showtimes[showtime] = seats
        sale.seats[showtime] = SeatCounts(available=cfg.seats)
        if cfg.waiting_room:
            await queue.open_room(client, platform.url["hold"], admin, showtime, cfg.active_limit)
    now = datetime.now(UTC)
    sale.voucher = f"FLASH{uuid.uuid4().hex[:8].upper()}"
    body = {"code": sale.voucher, "discountAmount": 300, "minOrderAmount": 0, "totalLimit": cfg.voucher_limit,
            "perUserLimit": 1, "startsAt": (now - timedelta(hours=1)).isoformat(),
            "endsAt": (now + timedelta(days=1)).isoformat(), "flashSale": True}
    r = await client.post(f"{platform.url['voucher']}/admin/vouchers", headers=admin, json=body)
    r.raise_for_status()
    sale.catalogue.vouchers[sale.voucher] = body
    first = 10**11 + uuid.uuid4().int % 10**11
    sale.customers = [first + i for i in range(cfg.customers)]
    rng = random.Random(f"{cfg.seed}:known")
    sale.known = {c for c in sale.customers if rng.random() < cfg.known_share}
    await upsert_all(platform.dsn["notifier"],
                     [Contact(c, f"c{c}@example.com", f"Customer {c}") for c in sorted(sale.known)])


async def read_seats(sale: Sale, client: httpx.AsyncClient, rooms: bool = True) -> None:
    """Each showtime's seat counts (and, `rooms`, its waiting room's figures) now; sold_out once every seat is
    BOOKED and no cancellation could have freed one meanwhile (ending.py)."""
    mark = sale.end.mark()
    admin = admin_headers(sale.platform)
    hold = sale.platform.url["hold"]
    read = 0  # showtimes read in this pass: counts left from an earlier one may predate a cancellation
    for showtime in sale.catalogue.showtimes:
        try:
            # A public read; the token costs nothing and suits a hold-service that would ask for one.
            r = await client.get(f"{hold}/showtimes/{showtime}/seats", headers=admin, timeout=5)
        except httpx.HTTPError:
            continue
        if r.status_code == 200:
            read += 1
            body = r.json()
            statuses = Counter(s["status"] for s in body["seats"])
            sale.seats[showtime] = SeatCounts(statuses["AVAILABLE"], statuses["HELD"], statuses["BOOKED"],
                                              body.get("version", 0))
        if rooms and (sale.cfg.waiting_room or sale.cfg.room_auto) \
                and (figures := await queue.room_figures(client, hold, admin, showtime)):
            sale.rooms[showtime] = figures
    every_seat_booked = read == len(sale.catalogue.showtimes) and sale.booked() >= sale.cfg.capacity
    if sale.end.settle(mark, every_seat_booked):
        sale.sold_out.set()


async def watch(sale: Sale, client: httpx.AsyncClient, interval: float = 0.5, rooms: bool = True) -> None:
    """read_seats until cancelled."""
    while True:
        await read_seats(sale, client, rooms)
        await asyncio.sleep(interval)
