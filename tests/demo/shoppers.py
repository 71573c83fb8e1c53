"""One customer of the sale, as a customer process plays him: choose a showtime with a free seat (through its
waiting room if it has one), play his part's journey, and leave once he got a hold, or when the sale is over.

Where holds outlast the sale (`make up`'s 600 s), a customer never lets one lapse: once his journey is over he
looks at his hold, waits a little while his payment is on its way or paid, and cancels the hold if it is still
HELD (a checkout that failed, a declined card not retried, a payment that never came). A sale that stops at its
limit thus comes to rest too.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from ..e2e.customers import Catalogue, Customer, Shop, seconds_until
from ..e2e.saga.history import Journey
from . import best, hall, queue
from .sale import FALLBACK, Part, Sale

SETTLE_SECONDS = 30.0  # how long a customer who paid waits for his booking before he gives the hold up
BOOKING_GRACE_SECONDS = 3.0  # after his hold's end, for a payment made at the last moment to show as booked
BUYERS = {"pays", "pays twice", "declines, retries"}  # the parts that mean to end with a booking
# the calls of customers holding nothing
BROWSING = {"seat_map", "hold", "hold_best", "queue_join", "queue_poll", "room_look"}


class SaleCustomer(Customer):
    """A customer of the sale: shops at a showtime with a free seat, through its waiting room if it has one.
    Every call of his goes through `client`, his source address's (addresses.py; the shop's when none)."""

    def __init__(self, sale: Sale, shop: Shop, index: int, customer_id: int,
                 client: httpx.AsyncClient | None = None) -> None:
        super().__init__(shop, index, customer_id, sale.cfg.seed)
        self.sale = sale
        self.client = client or shop.client
        self.showtime = 0
        self.admissions = queue.Admissions(rooms=set(sale.catalogue.showtimes) if sale.cfg.waiting_room else set())
        self.looked: set[int] = set()  # showtimes whose room he looked at (--waiting-room auto), as the page does
        # Asks for the best seats available instead of picking (--best-share), drawn once per customer.
        self.best = random.Random(f"{sale.cfg.seed}:best:{index}").random() < sale.cfg.best_share

    async def take_hold(self, j: Journey, rng: random.Random) -> dict[str, Any] | None:
        if not self.best:
            return await super().take_hold(j, rng)
        j.notes.append("best_available")
        return await best.take_best(self, j, rng)

    def choose_showtime(self, wave: Catalogue, rng: random.Random) -> int:
        return self.showtime

    async def call(self, j: Journey, f: str, method: str, url: str, *, value: dict[str, Any] | None = None,
                   auth: bool = True, **kwargs: Any) -> httpx.Response | None:
        """Browsing (seat maps, holds, the queue) shares the process's --connections, as the herd of a sale
        offers its load; a customer who holds seats checks out and pays on a connection of his own, as each
        browser does, so the generator never makes him late for his own hold. Both from his own address.
        Latency counts from the send, as the platform sees the call; the wait for one of the --connections
        is counted apart (`slot_waits`)."""
        headers = {**(self.auth if auth else {}), **kwargs.pop("headers", {})}
        if f not in BROWSING:
            return await self.shop.history.call(self.process, j.id, f, value or {}, lambda: self.client.request(
                method, url, headers=headers, **kwargs))
        asked = time.monotonic()
        async with self.sale.in_flight:
            self.sale.slot_waits.append(time.monotonic() - asked)
            return await self.shop.history.call(self.process, j.id, f, value or {}, lambda: self.client.request(
                method, url, headers=headers, **kwargs))

    def hold_headers(self, showtime: int) -> dict[str, str]:
        return self.admissions.headers(showtime)

    def tickets(self, showtime: int, seats: list[str], rng: random.Random) -> list[Any]:
        return hall.tickets_for(seats, hall.categories_for(self.sale.cfg.seats), rng)

    async def enter(self, j: Journey, rng: random.Random) -> bool:
        """Pick a showtime with a free seat (as the dashboard last saw them); through its room if it has one."""
        free = self.sale.free_showtimes()
        if not free:
            return False
        self.showtime = rng.choice(free)
        if self.sale.cfg.room_auto and self.showtime not in self.looked:
            self.looked.add(self.showtime)  # the page's first look: is the room on? (an arrival it counts)
            if await queue.room_on(self.shop.history, self.process, j, self.client, self.shop.url["hold"],
                                   self.auth, self.showtime):
                self.admissions.rooms.add(self.showtime)
        if self.showtime in self.admissions.rooms and self.showtime not in self.admissions.tokens:
            return await self.through_room(j, self.showtime)
        return True

    async def through_room(self, j: Journey, showtime: int) -> bool:
        """Queue at the showtime's room until admitted (its token kept for his holds); False: not admitted."""
        token = await queue.wait_admitted(self.shop.history, self.process, j, self.client, self.shop.url["hold"],
                                          self.auth, showtime, self.sale.deadline)
        if token is None:
            return False
        self.admissions.tokens[showtime] = token
        return True

    async def admission_refused(self, j: Journey, showtime: int) -> bool:
        """The room turned on while he was on the map (it opened itself, or his slot ended): to the queue, as
        the seat-map page sends him."""
        self.admissions.rooms.add(showtime)
        self.admissions.tokens.pop(showtime, None)
        j.notes.append("sent_to_the_queue")
        return await self.through_room(j, showtime)

    async def hold_status(self, j: Journey) -> str | None:
        r = await self.call(j, "hold_status", "GET", f"{self.shop.url['hold']}/holds/{j.hold_id}",
                            value={"holdId": j.hold_id})
        return str(r.json().get("status")) if r is not None and r.status_code == 200 else None

    async def payment_status(self, j: Journey, payment_id: str) -> str | None:
        r = await self.call(j, "payment", "GET", f"{self.shop.url['pay']}/payments/{payment_id}",
                            value={"paymentId": payment_id})
        return str(r.json().get("status")) if r is not None and r.status_code == 200 else None

    async def settle(self, j: Journey) -> str | None:
        """The hold must not outlive the journey: wait while its last payment is on its way (PENDING) or paid
        (the booking follows), else cancel it. How the hold ended."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while (status := await self.hold_status(j)) == "HELD":
            last = await self.payment_status(j, j.payment_ids[-1]) if j.payment_ids else None
            if last not in ("PENDING", "SUCCEEDED") or time.monotonic() >= deadline:
                if "cancelled_at_the_end" not in j.notes:
                    j.notes.append("cancelled_at_the_end")
                r = await self.cancel(j)
                # A 503 (a busy API shedding) or no answer: the hold is still his, so he asks again, as a page
                # does after Retry-After; given up once the settling time is long past.
                if (r is not None and r.status_code not in (429, 503)) or time.monotonic() >= deadline + 60:
                    return "RELEASED"
            await asyncio.sleep(1.0)
        return status

    async def booked(self, j: Journey) -> bool:
        """Whether the journey's hold ended booked. Where holds outlast the sale, settle() ends it; where they
        lapse within it, one look now and, if it is still HELD, one once it has lapsed (a payment made in time
        shows BOOKED by then)."""
        if not self.sale.expiry_plays:
            return await self.settle(j) == "BOOKED"
        r = await self.call(j, "hold_status", "GET", f"{self.shop.url['hold']}/holds/{j.hold_id}",
                            value={"holdId": j.hold_id})
        if r is None or r.status_code != 200:
            return False
        if r.json().get("status") != "HELD":
            return r.json().get("status") == "BOOKED"
        await asyncio.sleep(max(0.0, seconds_until(r.json()["expiresAt"])) + BOOKING_GRACE_SECONDS)
        return await self.hold_status(j) == "BOOKED"


def over(sale: Sale) -> bool:
    return sale.sold_out.is_set() or time.monotonic() >= sale.deadline or bool(sale.stop and sale.stop.is_set())


async def shop_until_served(sale: Sale, c: SaleCustomer, part: Part, arrival: float) -> None:
    """Arrive at `arrival` (the shared clock), then try the part's journey until it got a hold (then leave) or
    the sale is over. A buyer whose hold ended unbooked (he was too slow to pay, his card was declined for good)
    shops again, as a customer would; the parts that mean to leave unpaid leave."""
    await asyncio.sleep(max(0.0, arrival - time.monotonic()))
    sale.arrived += 1
    sale.shopping += 1
    steps = part.steps if sale.expiry_plays or part.name not in FALLBACK else FALLBACK[part.name]
    attempt = 0
    try:
        while not over(sale):
            rng = c.rng(attempt)
            step = rng.choice(steps)
            j = c.shop.history.journey(c.id, part.name)
            if await c.enter(j, rng):
                await step(c, j, rng)
                if j.hold_id and part.name not in BUYERS:
                    if not sale.expiry_plays:
                        await c.settle(j)
                    return
                if j.hold_id:
                    if await c.booked(j):
                        return
                    j.notes.append("shops_again")
            attempt += 1
            # No seat this time: look again a little later, as a person would (seats come back as holds end).
            await asyncio.sleep(rng.uniform(1.0, 3.0) if sale.free_showtimes() else rng.uniform(2.0, 4.0))
    finally:
        sale.shopping -= 1
        sale.done += 1
