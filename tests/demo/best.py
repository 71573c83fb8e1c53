"""Best available in the sale: a share of the customers (--best-share) ask for the best N seats of a category side by
side instead of picking seats from a seat map that may be two seconds old; the closing table puts their 409s per
booking beside the picking customers'.

A best-available customer asks for as many seats as a picking one (1-4) of a category drawn as a picked seat's would
be (a random seat of the hall's), with ticket types as a picking one's (`ticketTypes`); when none are free together
(409 with `"together": false`) he asks again for the best seats nearest each other (`"together": false`), as the
contract invites, and then for seats of another category; any other 409 or a 429 / 503, a moment later; three tries
in all, as a picking customer.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from ..e2e.customers import NO_ANSWER_TRIES, SEAT_COUNTS, Customer
from ..e2e.saga.facts import Facts
from ..e2e.saga.history import History, Journey
from . import hall
from .table import Row

KINDS = {"hold": "picking", "hold_best": "best available"}


async def take_best(c: Customer, j: Journey, rng: random.Random) -> dict[str, Any] | None:
    showtime = c.choose_showtime(c.shop.wave, rng)
    j.showtime = showtime
    sale = getattr(c, "sale", None)  # a SaleCustomer's: the hall of the sale
    categories = list(hall.categories_for(sale.cfg.seats).values()) if sale is not None else []
    asked: dict[str, Any] = {"count": rng.choice(SEAT_COUNTS), "category": rng.choice(categories or ["STANDARD"])}
    asked["ticketTypes"] = hall.ticket_types_for(asked["count"], asked["category"], rng)
    for _ in range(3):
        headers = {**c.hold_headers(showtime), "Idempotency-Key": uuid.uuid4().hex}
        for _ in range(NO_ANSWER_TRIES):
            r = await c.call(j, "hold_best", "POST", f"{c.shop.url['hold']}/showtimes/{showtime}/holds",
                             value={"showtime": showtime, "best": dict(asked)}, json={"best": asked},
                             headers=headers)
            if r is not None:
                break
        if r is not None and r.status_code == 201:
            hold: dict[str, Any] = r.json()
            j.hold_id, j.booking_id = hold["holdId"], hold["bookingId"]
            return hold
        if r is not None and r.status_code == 403 and await c.admission_refused(j, showtime):
            continue
        if r is None or r.status_code not in (409, 429, 503):
            return None
        if r.status_code == 409 and r.json().get("together") is False:
            others = sorted(set(categories) - {asked["category"]})
            if asked.get("together") is False and others:  # not even apart: another category
                category = rng.choice(others)
                asked = {**asked, "category": category,
                         "ticketTypes": hall.ticket_types_for(asked["count"], category, rng)}
            else:
                asked = {**asked, "together": False}
        await asyncio.sleep(rng.uniform(0.05, 0.3))
    j.notes.append("no_hold")
    return None


def refusals_per_booking(history: History, facts: Facts) -> dict[str, tuple[int, int]]:
    """Per kind of customer: (409 answers to his hold requests, bookings his journeys made)."""
    refused = {kind: sum(1 for op in history.completions(f) if op.get("status") == 409) for f, kind in KINDS.items()}
    booked = {kind: 0 for kind in KINDS.values()}
    for j in history.journeys.values():
        b = facts.bookings.get(j.booking_id or "")
        if b is not None and b.get("payment_id") is not None and b.get("status") in ("BOOKED", "CANCELLED"):
            booked["best available" if "best_available" in j.notes else "picking"] += 1
    return {kind: (refused[kind], booked[kind]) for kind in KINDS.values()}


def best_row(figures: dict[str, tuple[int, int]], share: float) -> Row:
    def one(kind: str) -> str:
        refused, booked = figures[kind]
        per = f"{refused / booked:.2f}" if booked else "-"
        return f"{kind} {per} ({refused} 409s / {booked} bookings)"
    return Row("409s per booking, best available vs picking",
               f"{one('best available')} vs {one('picking')}; {share:.0%} of customers ask for best available",
               None)
