"""POST /holds/{id}/extend (payment-service at checkout) and the seat gate's refill after a Redis flush, on the
real app against Postgres and Redis: the rules of docs/saga.md, read back from the database."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
from hold_service.adapters.seat_gate import mark_key
from hold_service.domain.commands import ConfirmBooking
from hold_service.service_layer.lifecycle import confirm_booking
from prometheus_client import REGISTRY
from ticketing_testing import eventually
from ticketing_testing.seat_map_versions import numbered
from ticketing_testing.workers import own_redis_db

pytestmark = pytest.mark.integration


def later(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def extend(svc, h, hold_id: str, until: str, customer: int | None = None, role: str = "service"):  # type: ignore[no-untyped-def]
    body = {"until": until, **({"customerId": customer} if customer else {})}
    return await svc.client.post(f"/holds/{hold_id}/extend", json=body, headers=h.auth(0, role))


async def extended_events(db, booking_id: str) -> list[dict]:  # type: ignore[type-arg]
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 "
                          "ORDER BY id", booking_id)
    return [e for r in rows if (e := json.loads(r["e"]))["type"] == "HoldExtended"]


async def test_an_extension_moves_the_hold_and_its_seats_with_one_hold_extended(start, db, h) -> None:
    async with start(hold_ttl_seconds=600, hold_max_seconds=1200) as svc:
        sid, customer = await svc.showtime(), h.new_id()
        held = (await svc.hold(sid, ["F1", "F2"], customer)).json()
        until = later(900)
        r = await extend(svc, h, held["holdId"], until, customer)
        assert r.status_code == 200, r.text
        expires = datetime.fromisoformat(r.json()["expiresAt"])
        assert abs(expires - datetime.fromisoformat(until)) < timedelta(milliseconds=1)
        again = await extend(svc, h, held["holdId"], until, customer)  # idempotent
        shorter = await extend(svc, h, held["holdId"], later(60), customer)  # never shortened
        assert again.json() == shorter.json() == r.json()
        seen = (await svc.client.get(f"/holds/{held['holdId']}", headers=h.auth(customer))).json()
        assert datetime.fromisoformat(seen["expiresAt"]) == expires and seen["status"] == "HELD"
        assert datetime.fromisoformat(seen["createdAt"]) < expires - timedelta(seconds=890)
        rows = await h.seat_rows(db, sid)
        assert rows["F1"]["hold_expires_at"] == rows["F2"]["hold_expires_at"] == expires
        (event,) = await extended_events(db, held["bookingId"])
        assert event["data"]["holdId"] == held["holdId"]
        assert datetime.fromisoformat(event["data"]["expiresAt"]) == expires
        assert (event["showtimeId"], event["customerId"], "seatMapVersion" in event["data"]) == (sid, customer, False)


async def test_an_extension_stops_at_the_holds_creation_plus_hold_max(start, db, h) -> None:
    async with start(hold_ttl_seconds=600, hold_max_seconds=700) as svc:
        sid = await svc.showtime()
        held = (await svc.hold(sid, ["F1"])).json()
        r = await extend(svc, h, held["holdId"], later(3600))
        created = await db.fetchval("SELECT created_at FROM booking WHERE hold_id = $1::uuid", held["holdId"])
        assert datetime.fromisoformat(r.json()["expiresAt"]) == created + timedelta(seconds=700)


async def test_only_a_live_held_hold_of_the_customer_is_extended_never_revived(start, db, h) -> None:
    async with start(hold_ttl_seconds=0.5) as svc:
        sid, customer = await svc.showtime(), h.new_id()
        cancelled, lapsed, mine = [(await svc.hold(sid, [s], customer)).json() for s in ("F1", "F2", "F3")]
        assert (await extend(svc, h, mine["holdId"], later(60), customer)).status_code == 200
        assert (await svc.client.delete(f"/holds/{cancelled['holdId']}", headers=h.auth(customer))).status_code == 204
        await asyncio.sleep(0.8)  # F2's hold is past its time (lazy expiry: still HELD in its row)
        for ended in (cancelled, lapsed):
            r = await extend(svc, h, ended["holdId"], later(600), customer)
            assert (r.status_code, r.json()["error"]) == (409, "HOLD_NOT_ACTIVE") and "hold the seats again" in \
                r.json()["message"]
            assert await extended_events(db, ended["bookingId"]) == []
        assert (await svc.hold(sid, ["F2"])).status_code == 201  # the lapsed hold stayed over: F2 is free
        assert (await extend(svc, h, mine["holdId"], later(60), h.new_id())).status_code == 404  # not his
        assert (await extend(svc, h, str(uuid.uuid4()), later(60))).status_code == 404
        assert (await extend(svc, h, mine["holdId"], later(60), customer, role="customer")).status_code == 403
        bad = await svc.client.post(f"/holds/{mine['holdId']}/extend", json={"until": "soon"},
                                    headers=h.auth(0, "service"))
        assert (bad.status_code, bad.json()["error"]) == (422, "VALIDATION_ERROR")


async def test_a_payment_applied_after_the_first_expiry_within_the_extension_books(start, db, h) -> None:
    async with start(hold_ttl_seconds=1) as svc:
        sid = await svc.showtime()
        held = (await svc.hold(sid, ["F1"])).json()
        assert (await extend(svc, h, held["holdId"], later(4))).status_code == 200
        await asyncio.sleep(1.5)  # past the hold's first expiry, within the extension
        taken = await svc.hold(sid, ["F1"])
        assert taken.status_code == 409  # lazy expiry reads the extended seat: nobody took it
        async with svc.deps.uow() as uow:
            outcome = await confirm_booking(ConfirmBooking(uuid.UUID(held["bookingId"]), uuid.uuid4(), 1200), uow)
            await uow.commit()
        assert outcome == "confirmed"
        assert (await h.seat_rows(db, sid))["F1"]["status"] == "BOOKED"


def decisions() -> dict[str, float]:
    return {by: REGISTRY.get_sample_value("ticketing_hold_decisions_total",
                                          {"decided_by": by, "outcome": "refused"}) or 0.0
            for by in ("redis", "postgres")}


async def test_after_a_flush_mid_sale_the_gate_is_refilled_and_refused_clicks_stop_reaching_postgres(
        start, db, h, redis_url) -> None:
    url = own_redis_db(redis_url, 1)  # a logical db of this worker's own, flushed below
    raw = aioredis.from_url(url)
    async with start(redis_url=url, hold_ttl_seconds=600) as svc:
        sid = await svc.showtime({"A": 12})
        held = [(await svc.hold(sid, [f"A{n}"])).json() for n in range(1, 9)]
        for sold in held[:3]:  # three of them paid: BOOKED
            async with svc.deps.uow() as uow:
                await confirm_booking(ConfirmBooking(uuid.UUID(sold["bookingId"]), uuid.uuid4(), 1200), uow)
                await uow.commit()
        await raw.flushdb()  # Redis loses the gate mid-sale
        first = await svc.hold(sid, ["A1"])
        assert (first.status_code, first.json()["decidedBy"]) == (409, "postgres")  # it saw the mark gone
        await eventually(lambda: raw.exists(mark_key(sid)), 10)
        before = decisions()
        clicks = [await svc.hold(sid, [f"A{n}"]) for n in range(1, 9) for _ in range(5)]
        assert {(r.status_code, r.json()["decidedBy"]) for r in clicks} == {(409, "gate")}
        after = decisions()
        assert (after["redis"] - before["redis"], after["postgres"] - before["postgres"]) == (40, 0)
        assert (await svc.hold(sid, ["A9"])).status_code == 201  # free seats still go through
        await h.assert_single_holders(db, sid)
    await raw.aclose()
