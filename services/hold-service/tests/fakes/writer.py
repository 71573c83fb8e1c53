"""HoldWriter: take_seats on the in-memory schema, one hold a transaction, the cap checked at commit."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta

from hold_service.domain.errors import TooManySeatsHeld
from hold_service.domain.model import Hold, TakeSeats, Verdict
from hold_service.domain.model import Ticket as HoldTicket
from hold_service.service_layer.ports import (
    HoldWriter,
)
from ticketing_testing.in_memory import MemoryDb, MemoryTransaction

from .rules import live_holds, seat_is_free, seat_map_event
from .tables import Seat


class FakeHoldWriter(HoldWriter):
    """take_seats: one hold, its own transaction; the cap is checked at its commit."""

    def __init__(self, db: MemoryDb) -> None:
        self.db = db

    async def take(self, request: TakeSeats) -> Verdict:
        await asyncio.sleep(0)  # the round trip to Postgres: other requests run meanwhile
        tx = self.db.begin()
        verdict = _take(tx, request)
        if verdict.expires_at is not None and not verdict.earlier:  # written: the commit-time cap check
            _check_cap(tx, request)
        tx.commit()
        return verdict


def _take(tx: MemoryTransaction, r: TakeSeats) -> Verdict:
    showtime = tx["showtimes"].get(r.showtime_id)
    earlier = r.hold_id in tx["bookings"]
    locked = {code: seat for code in r.seats if (seat := tx["seats"].get((r.showtime_id, code))) is not None}
    tickets = () if showtime is None else tuple(
        HoldTicket(c, showtime.places[c].category, t, showtime.price(c, t))  # type: ignore[arg-type]
        for c, t in zip(r.seats, r.types(), strict=True) if c in locked)
    unpriced = tuple(t.seat for t in tickets if t.price_cents is None)
    closed = showtime is not None and not showtime.on_sale(tx.now, r.close_minutes)
    amount = None if showtime is None else sum(t.price_cents or 0 for t in tickets)
    free = {code: seat_is_free(seat, tx.now) for code, seat in locked.items()}
    taken = [c for c in sorted(locked) if not free[c] and locked[c].hold_id != r.hold_id]
    complete = len(locked) == len(r.seats)
    if amount is None or closed or earlier or not complete or not all(free.values()) or unpriced:
        mine = complete and all(s.hold_id == r.hold_id and s.status == "HELD" and not free[c]
                                for c, s in locked.items())
        expires = min(s.expires_at for s in locked.values() if s.expires_at) if mine else None
        return Verdict(amount_cents=amount, found=frozenset(locked), taken=taken, expires_at=expires, earlier=earlier,
                       tickets=tickets, unpriced=unpriced, closed=closed)
    expires_at = tx.now + timedelta(seconds=r.ttl_seconds)
    for old_id in dict.fromkeys(s.hold_id for s in locked.values() if s.status == "HELD"):  # lazy expiry
        seats = sorted(c for c, s in locked.items() if s.hold_id == old_id)
        seat_map_event(tx, "SeatsReleased", tx["bookings"][old_id],
                       {"holdId": old_id, "seats": seats, "reason": "EXPIRED"})
    for code in r.seats:
        tx["seats"][(r.showtime_id, code)] = Seat("HELD", r.hold_id, expires_at)
    hold = Hold(hold_id=r.hold_id, booking_id=r.booking_id, customer_id=r.customer_id, showtime_id=r.showtime_id,
                seats=r.seats, status="HELD", expires_at=expires_at, amount_cents=amount,
                created_at=tx.now, tickets=tickets)
    tx["bookings"][r.hold_id] = hold
    seat_map_event(tx, "SeatsHeld", hold, {"holdId": r.hold_id, "seats": r.seats, "expiresAt": expires_at,
                                           "amountCents": hold.amount_cents})
    return Verdict(amount_cents=amount, found=frozenset(locked), taken=[], expires_at=expires_at, tickets=tickets)


def _check_cap(tx: MemoryTransaction, r: TakeSeats) -> None:
    """check_customer_seat_cap: over the cap, the commit fails and nothing of the hold is written."""
    held = live_holds(tx, r.customer_id, r.showtime_id)
    if sum(len(h.seats) for h in held) <= r.cap:
        return
    others = [h.expires_at for h in held if h.hold_id != r.hold_id]
    frees_in = math.ceil((min(others) - tx.now).total_seconds()) if others else 1
    raise TooManySeatsHeld(sum(len(h.seats) for h in held) - len(r.seats), r.cap, frees_in)
