"""The part "cancels booking": a customer books (the journey of "pays"), waits for his booking, then cancels it
(`POST /bookings/{id}/cancel`): his seats go back on sale and other customers buy them, his payment is
refunded in full once, his voucher use released, and he gets one cancellation e-mail; the checker judges
all of it after the sale.

He cancels only while the sale still has a seat unsold besides his own (read from its showtimes' seat maps just
before): his seats then come back to a sale still on, where customers still shop. That last seat may sell while
he cancels, so from his look until his cancellation has answered no customer process may decide the sale sold
out (its customers would leave his seats unsold), and once one has, he keeps his booking (ending.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING

from ..e2e import journeys
from ..e2e.customers import Customer
from ..e2e.saga.history import Journey

if TYPE_CHECKING:
    from .shoppers import SaleCustomer

BOOKING_WAIT_SECONDS = 30.0  # how long he waits for his paid hold to show BOOKED
UNSOLD_TO_CANCEL = 1


async def booked_seats(c: Customer, j: Journey, within: float = BOOKING_WAIT_SECONDS) -> set[str] | None:
    """The seats of the journey's hold once it shows BOOKED within `within` seconds (his payment is on its
    way); None if it does not."""
    deadline = time.monotonic() + within
    while True:
        r = await c.call(j, "hold_status", "GET", f"{c.shop.url['hold']}/holds/{j.hold_id}",
                         value={"holdId": j.hold_id})
        body = r.json() if r is not None and r.status_code == 200 else {}
        if body.get("status") != "HELD" or time.monotonic() >= deadline:
            return set(body.get("seats", [])) if body.get("status") == "BOOKED" else None
        await asyncio.sleep(0.5)


async def unsold_besides(c: Customer, j: Journey, own: set[str]) -> int:
    """Seats of the sale not BOOKED, other than `own` (of the journey's showtime), as the seat maps show them
    now; his own showtime first, the others only while none is found."""
    unsold = 0
    for showtime in sorted(c.shop.wave.showtimes, key=lambda s: s != j.showtime):
        r = await c.call(j, "seat_map", "GET", f"{c.shop.url['hold']}/showtimes/{showtime}/seats",
                         value={"showtime": showtime})
        if r is None or r.status_code != 200:
            return 0  # not known: he keeps his booking
        mine = own if showtime == j.showtime else set()
        unsold += sum(1 for s in r.json()["seats"] if s["status"] != "BOOKED" and s["code"] not in mine)
        if unsold >= UNSOLD_TO_CANCEL:
            break
    return unsold


async def book_then_cancel(c: SaleCustomer, j: Journey, rng: random.Random) -> None:
    await journeys.book(c, j, rng)
    if not j.payment_ids or (own := await booked_seats(c, j)) is None:
        return
    if not c.sale.end.begin_cancel():  # a process told its customers the sale sold out: none would buy his seats
        j.notes.append("kept_booking_sold_out")
        return
    try:
        if await unsold_besides(c, j, own) < UNSOLD_TO_CANCEL:
            j.notes.append("kept_booking_nearly_sold_out")
            return
        r = await c.cancel_booking(j)
        j.notes.append("cancelled_booking" if r is not None and r.status_code == 202 else "cancel_refused")
    finally:
        c.sale.end.end_cancel()
