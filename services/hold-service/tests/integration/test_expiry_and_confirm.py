"""Lazy expiry, the sweeper, and PaymentSucceeded before/after expiry (driven directly)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from hold_service.adapters.repository import PgHoldsUnitOfWork
from hold_service.domain.commands import ConfirmBooking
from hold_service.service_layer.lifecycle import confirm_booking, sweep_expired
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


async def _confirm(svc, booking_id: str, payment_id: uuid.UUID, paid: int = 1200) -> str:
    """As the PaymentSucceeded consumer does: inside a transaction the caller owns."""
    async with svc.service.pool.acquire() as conn, conn.transaction():
        return await confirm_booking(ConfirmBooking(uuid.UUID(booking_id), payment_id, paid),
                                     PgHoldsUnitOfWork(conn=conn))


async def _events(db, booking_id: str) -> list[tuple[str, dict]]:
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8')::jsonb AS e FROM outbox "
                          "WHERE message_key = $1 ORDER BY id", booking_id)
    events = [json.loads(r["e"]) for r in rows]
    return [(e["type"], e["data"]) for e in events]


async def test_expired_hold_is_reheld_before_any_sweep_then_swept(start, db, h) -> None:
    async with start(hold_ttl_seconds=1, sweep_batch_size=100_000) as svc:
        sid = await svc.showtime()
        first = (await svc.hold(sid, ["F1", "F2"])).json()
        await asyncio.sleep(1.2)
        second = await svc.hold(sid, ["F2", "F3"])  # lazy expiry: no sweeper has run
        assert second.status_code == 201, second.text
        seats = await h.seat_rows(db, sid)
        assert str(seats["F2"]["hold_id"]) == second.json()["holdId"]
        owner_view = await svc.client.get(f"/holds/{first['holdId']}", headers=h.auth(0, "service"))
        assert owner_view.json()["status"] == "EXPIRED"
        await asyncio.sleep(2.0)  # the second hold (taken ~1.2 s in) has expired too
        async def swept() -> bool:
            await sweep_expired(svc.deps)  # a worker of a parallel e2e run may sweep too (SKIP LOCKED)
            seats = await h.seat_rows(db, sid)
            return {seats[c]["status"] for c in ("F1", "F2", "F3")} == {"AVAILABLE"}
        assert await eventually(swept, timeout=10)
    # The re-hold released F2 first (lazy expiry), the sweeper F1: each names only the seats it freed.
    released = [d for t, d in await _events(db, first["bookingId"]) if t == "SeatsReleased"]
    assert [(d["reason"], d["seats"]) for d in released] == [("EXPIRED", ["F2"]), ("EXPIRED", ["F1"])]
    held = [d for t, d in await _events(db, second.json()["bookingId"]) if t == "SeatsHeld"]
    assert held[0]["seatMapVersion"] == released[0]["seatMapVersion"] + 1


async def test_payment_in_time_books_and_is_idempotent(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        hold = (await svc.hold(sid, ["F4", "F5"])).json()
        pay = uuid.uuid4()
        assert await _confirm(svc, hold["bookingId"], pay, paid=1900) == "confirmed"  # 500 off with a voucher
        assert await _confirm(svc, hold["bookingId"], pay, paid=1900) == "already_booked"
        seats = await h.seat_rows(db, sid)
        assert seats["F4"]["status"] == seats["F5"]["status"] == "BOOKED"
        r = await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(0, "customer"))
        assert r.status_code == 404
        owner = await db.fetchval("SELECT customer_id FROM booking WHERE hold_id=$1",
                                  uuid.UUID(hold["holdId"]))
        r = await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(owner))
        assert r.status_code == 409 and r.json()["error"] == "HOLD_NOT_ACTIVE"
    confirmed = [d for t, d in await _events(db, hold["bookingId"]) if t == "BookingConfirmed"]
    assert len(confirmed) == 1 and confirmed[0]["paymentId"] == str(pay)
    assert confirmed[0]["seats"] == ["F4", "F5"]
    assert (confirmed[0]["amountCents"], confirmed[0]["discountCents"]) == (1900, 500)  # what was paid


async def test_payment_after_expiry_fails_and_seat_is_not_booked(start, db, h) -> None:
    async with start(hold_ttl_seconds=1) as svc:
        sid = await svc.showtime()
        late = (await svc.hold(sid, ["F6"])).json()
        await asyncio.sleep(1.2)
        taker = (await svc.hold(sid, ["F6"])).json()
        assert await _confirm(svc, late["bookingId"], uuid.uuid4()) == "HOLD_EXPIRED"
        seat = (await h.seat_rows(db, sid))["F6"]
        assert seat["status"] == "HELD" and str(seat["hold_id"]) == taker["holdId"]
        alone = (await svc.hold(sid, ["F7"])).json()
        await asyncio.sleep(1.2)  # expired, nobody took it, no sweeper ran
        assert await _confirm(svc, alone["bookingId"], uuid.uuid4()) == "HOLD_EXPIRED"
        assert (await h.seat_rows(db, sid))["F7"]["status"] == "AVAILABLE"
    failed = [d for t, d in await _events(db, late["bookingId"]) if t == "BookingFailed"]
    assert [d["reason"] for d in failed] == ["HOLD_EXPIRED"]


async def test_a_payment_applied_again_fails_its_booking_once(start, db, h) -> None:
    """A PaymentSucceeded applied a second time outside the inbox that saw it (a replay, a consumer group
    reset, another deployment's group on the same schema) says BookingFailed once: one refund per payment."""
    async with start() as svc:
        sid = await svc.showtime()
        who = h.new_id()
        hold = (await svc.hold(sid, ["F9"], who)).json()
        await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(who))
        payment, other = uuid.uuid4(), uuid.uuid4()
        for paid in (payment, payment, other):
            assert await _confirm(svc, hold["bookingId"], paid) == "HOLD_RELEASED"
    failed = [d["paymentId"] for t, d in await _events(db, hold["bookingId"]) if t == "BookingFailed"]
    assert sorted(failed) == sorted([str(payment), str(other)])  # one per payment


async def test_payment_after_cancel_is_hold_released(start, db, h) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        who = h.new_id()
        hold = (await svc.hold(sid, ["F8"], who)).json()
        await svc.client.delete(f"/holds/{hold['holdId']}", headers=h.auth(who))
        assert await _confirm(svc, hold["bookingId"], uuid.uuid4()) == "HOLD_RELEASED"
        assert (await h.seat_rows(db, sid))["F8"]["status"] == "AVAILABLE"
        assert await _confirm(svc, str(uuid.uuid4()), uuid.uuid4()) == "unknown"
