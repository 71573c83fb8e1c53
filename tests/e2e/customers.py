"""What a customer can do, through the public contract only (docs/api), each call recorded.

The steps here are the vocabulary of the journeys (journeys.py): take a hold, check out with or without a
voucher, pay on the hosted page or through the simulator's test control with a chosen callback delivery,
cancel, poll a payment. They return what the customer saw; the checker judges the outcome from the
databases afterwards.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from ticketing import http_pool
from ticketing.auth import issue_token

from .saga.history import History, Journey

SEAT_COUNTS = (1, 1, 2, 2, 3, 4)
# Idle seconds a pooled connection is used again, as our services' own clients keep it (ticketing.http_pool):
# under uvicorn's keep-alive, so a call is never sent on a connection the server is closing.
KEEPALIVE_EXPIRY = http_pool.KEEPALIVE_SECONDS
NO_ANSWER_TRIES = 3  # a hold request with no answer (timed out, connection lost) is asked again, same key
TOKEN_TTL = 24 * 3600  # a soak run outlives the default hour


@dataclass
class Catalogue:
    """One wave of the run: the showtimes and vouchers customers shop from."""

    showtimes: dict[int, list[str]] = field(default_factory=dict)  # showtime -> seat codes
    vouchers: dict[str, dict[str, Any]] = field(default_factory=dict)  # code -> the admin's create body
    sold_out: set[int] = field(default_factory=set)  # showtimes seen with no seat AVAILABLE


@dataclass
class Shop:
    """Where customers go: service URLs, the shared HTTP client, the history, the current wave."""

    url: dict[str, str]
    client: httpx.AsyncClient
    history: History
    jwt_secret: str
    hold_ttl: float
    wave: Catalogue = field(default_factory=Catalogue)
    waves: list[Catalogue] = field(default_factory=list)
    # Opens the next wave (new showtimes and vouchers) once every showtime of this one was seen sold out, so
    # a run of any length keeps customers competing for a few seats and a few voucher uses.
    open_wave: Callable[[], Awaitable[Catalogue]] | None = None
    _opening: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def sold_out(self, wave: Catalogue, showtime: int) -> None:
        wave.sold_out.add(showtime)
        async with self._opening:
            if wave is self.wave and wave.sold_out >= set(wave.showtimes) and self.open_wave is not None:
                await self.open_wave()


class Customer:
    def __init__(self, shop: Shop, index: int, customer_id: int, seed: int) -> None:
        self.shop, self.index, self.id, self.seed = shop, index, customer_id, seed
        self.process = f"c{index}"
        token = issue_token(shop.jwt_secret, sub=str(customer_id), role="customer", ttl_seconds=TOKEN_TTL)
        self.auth = {"Authorization": f"Bearer {token}"}
        self.discounted: set[str] = set()  # voucher codes this customer got a discount with (perUserLimit 1)
        self.last_error = ""  # the error code of the last refused checkout

    def rng(self, journey_number: int) -> random.Random:
        # One generator per journey: journey k of customer i draws the same choices in every run of a seed,
        # whatever the services answered in earlier journeys.
        return random.Random(f"{self.seed}:{self.index}:{journey_number}")

    async def call(self, j: Journey, f: str, method: str, url: str, *, value: dict[str, Any] | None = None,
                   auth: bool = True, **kwargs: Any) -> httpx.Response | None:
        headers = {**(self.auth if auth else {}), **kwargs.pop("headers", {})}
        return await self.shop.history.call(
            self.process, j.id, f, value or {},
            lambda: self.shop.client.request(method, url, headers=headers, **kwargs))

    # --- holds -----------------------------------------------------------------------------------

    async def take_hold(self, j: Journey, rng: random.Random) -> dict[str, Any] | None:
        """Hold 1-4 seats; now and then seats picked blind (maybe someone else's); up to 3 tries."""
        wave = self.shop.wave
        showtime = self.choose_showtime(wave, rng)
        j.showtime = showtime
        for _ in range(3):
            seats = await self._pick_seats(j, wave.showtimes[showtime], showtime, rng)
            if not seats:
                j.notes.append("sold_out")
                await self.shop.sold_out(wave, showtime)
                return None
            # Keyed, as the seat-map page does: a hold asked again after no answer is the hold the first ask may
            # have taken, not a second one left to lapse (on a stack whose holds last ten minutes, a sale's end).
            body = {"seats": self.tickets(showtime, seats, rng)}
            headers = {**self.hold_headers(showtime), "Idempotency-Key": uuid.uuid4().hex}
            for _ in range(NO_ANSWER_TRIES):
                r = await self.call(j, "hold", "POST", f"{self.shop.url['hold']}/showtimes/{showtime}/holds",
                                    value={"showtime": showtime, "seats": seats}, json=body, headers=headers)
                if r is not None:
                    break
            if r is not None and r.status_code == 201:
                hold: dict[str, Any] = r.json()
                j.hold_id, j.booking_id = hold["holdId"], hold["bookingId"]
                return hold
            if r is not None and r.status_code == 403 and await self.admission_refused(j, showtime):
                continue  # a waiting room turned on: admitted through it, he tries again with its token
            if r is None or r.status_code not in (409, 429, 503):
                return None
            await asyncio.sleep(rng.uniform(0.05, 0.3))
        j.notes.append("no_hold")
        return None

    def choose_showtime(self, wave: Catalogue, rng: random.Random) -> int:
        """Which showtime this journey shops at (the demo's customers choose one they were admitted to)."""
        return rng.choice(sorted(wave.showtimes))

    def tickets(self, showtime: int, seats: list[str], rng: random.Random) -> list[Any]:
        """The hold request's `seats`: codes (ADULT tickets); the demo's customers ask for other types too."""
        return seats

    def hold_headers(self, showtime: int) -> dict[str, str]:
        """Extra headers of a hold request (the demo's: an X-Admission-Token from a waiting room)."""
        return {}

    async def admission_refused(self, j: Journey, showtime: int) -> bool:
        """A hold answered 403 (ADMISSION_REQUIRED: the showtime's waiting room is on): whether the customer went
        through the room and may try again (the demo's customers queue, as the seat-map page does)."""
        return False

    async def _pick_seats(self, j: Journey, every: list[str], showtime: int, rng: random.Random) -> list[str]:
        r = await self.call(j, "seat_map", "GET", f"{self.shop.url['hold']}/showtimes/{showtime}/seats",
                            value={"showtime": showtime})
        free = [s["code"] for s in r.json()["seats"] if s["status"] == "AVAILABLE"] \
            if r is not None and r.status_code == 200 else every
        if not free:
            return []
        pool = every if rng.random() < 0.3 else free  # sometimes seats another customer holds
        return sorted(rng.sample(pool, min(rng.choice(SEAT_COUNTS), len(pool))))

    async def cancel(self, j: Journey) -> httpx.Response | None:
        return await self.call(j, "cancel", "DELETE", f"{self.shop.url['hold']}/holds/{j.hold_id}",
                               value={"holdId": j.hold_id})

    async def cancel_booking(self, j: Journey) -> httpx.Response | None:
        """The customer cancels his booking (before the deadline: the seats back on sale, a full refund)."""
        return await self.call(j, "booking_cancel", "POST", f"{self.shop.url['hold']}/bookings/{j.booking_id}/cancel",
                               value={"bookingId": j.booking_id})

    # --- vouchers and checkout -------------------------------------------------------------------

    def pick_voucher(self, rng: random.Random, chance: float, fresh: bool = False) -> str | None:
        """A voucher of the wave (None with 1 - chance); `fresh`: one this customer never got a discount with."""
        codes = sorted(c for c in self.shop.wave.vouchers if not fresh or c not in self.discounted)
        return rng.choice(codes) if codes and rng.random() < chance else None

    async def quote(self, j: Journey, code: str, amount: int) -> httpx.Response | None:
        return await self.call(j, "quote", "GET", f"{self.shop.url['voucher']}/vouchers/{code}/quote",
                               value={"code": code, "orderAmount": amount}, params={"orderAmount": amount})

    async def checkout(self, j: Journey, voucher: str | None, *, fallback: bool = True) -> dict[str, Any] | None:
        """POST checkout (a new Idempotency-Key); a refused voucher is dropped and the checkout asked again
        without it (as a customer would) unless `fallback` is False."""
        body = {"voucherCode": voucher} if voucher else {}
        r = await self.call(j, "checkout", "POST", f"{self.shop.url['pay']}/holds/{j.hold_id}/checkout",
                            value={"holdId": j.hold_id, "voucherCode": voucher}, json=body,
                            headers={"Idempotency-Key": uuid.uuid4().hex})
        if r is not None and r.status_code == 201:
            self.last_error = ""
            return self._checked_out(j, r.json(), voucher)
        error = self.last_error = _error(r) or ("no answer" if r is None else str(r.status_code))
        if voucher and error in ("OUT_OF_STOCK", "ALREADY_USED", "NOT_ELIGIBLE"):
            j.notes.append(f"voucher_{error.lower()}")
            if fallback:
                return await self.checkout(j, None)
        return None

    def _checked_out(self, j: Journey, body: dict[str, Any], voucher: str | None) -> dict[str, Any]:
        j.payment_ids.append(body["paymentId"])
        if voucher and body.get("discountCents", 0) > 0:
            self.discounted.add(voucher)
        return body

    async def release_voucher(self, j: Journey, code: str, order_id: str) -> httpx.Response | None:
        """Abuse (scenario S5, docs/reliability.md): give back one's own voucher use; the contract answers 404."""
        return await self.call(j, "voucher_release", "DELETE",
                               f"{self.shop.url['voucher']}/vouchers/{code}/reservations/{order_id}",
                               value={"code": code, "orderId": order_id})

    async def confirm_voucher(self, j: Journey, code: str, order_id: str) -> httpx.Response | None:
        return await self.call(j, "voucher_confirm", "POST",
                               f"{self.shop.url['voucher']}/vouchers/{code}/reservations/{order_id}/confirm",
                               value={"code": code, "orderId": order_id})

    # --- paying ----------------------------------------------------------------------------------

    async def pay_sim(self, j: Journey, checkout: dict[str, Any], outcome: str = "succeeded",
                      delivery: str = "normal", delay: float = 0.0) -> httpx.Response | None:
        """The simulator's test control: settle the session, choose how the callback is delivered."""
        session = session_id(checkout)
        return await self.call(j, "pay", "POST", f"{self.shop.url['sim']}/sim/sessions/{session}/pay",
                               value={"paymentId": checkout["paymentId"], "session": session, "outcome": outcome,
                                      "delivery": delivery, "delaySeconds": round(delay, 2)},
                               auth=False, json={"outcome": outcome, "delivery": delivery, "delaySeconds": delay})

    async def pay_page(self, j: Journey, checkout: dict[str, Any], action: str = "pay") -> httpx.Response | None:
        """The hosted page's Pay (or Decline) button."""
        return await self.call(j, "pay_page", "POST", str(checkout["redirectUrl"]), auth=False,
                               value={"paymentId": checkout["paymentId"], "action": action},
                               content=f"action={action}".encode(),
                               headers={"Content-Type": "application/x-www-form-urlencoded"})

    async def await_payment(self, j: Journey, payment_id: str, wanted: set[str], timeout: float) -> str | None:
        """Poll GET /payments/{id} until its status is in `wanted`; the last status seen."""
        deadline, status = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            r = await self.call(j, "payment", "GET", f"{self.shop.url['pay']}/payments/{payment_id}",
                                value={"paymentId": payment_id})
            status = r.json().get("status") if r is not None and r.status_code == 200 else status
            if status in wanted:
                return status
            await asyncio.sleep(0.5)
        return status


def session_id(checkout: dict[str, Any]) -> str:
    return urlsplit(str(checkout["redirectUrl"])).path.rstrip("/").rsplit("/", 1)[-1]


def seconds_until(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() - time.time()


def _error(r: httpx.Response | None) -> str:
    if r is None:
        return ""
    try:
        return str(r.json().get("error", ""))
    except ValueError:
        return ""
