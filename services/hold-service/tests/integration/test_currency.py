"""A showtime's currency (ISO 4217): CURRENCY unless the showtime names its own, shown beside every amount (seat
map, what's on, bookings) and carried by the events that carry money (SeatsHeld, BookingConfirmed), on Postgres.
A showtime of the previous release (made before the column, so without one) is given CURRENCY by the sweeper;
until then its events simply lack the optional field, and every consumer still reads them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hold_service.adapters import repository
from hold_service.entrypoints.worker import sweep
from ticketing.envelope import sql_form
from ticketing.events import BOOKING_EVENT_TYPES, BOOKING_EVENTS, decode_booking_event
from ticketing_testing.seat_map_versions import numbered

pytestmark = pytest.mark.integration


async def events(db: Any, booking_id: str) -> dict[str, dict[str, Any]]:
    await numbered(db)
    rows = await db.fetch("SELECT convert_from(payload, 'UTF8') AS e FROM outbox WHERE message_key = $1 ORDER BY id",
                          booking_id)
    found = [json.loads(r["e"]) for r in rows]
    for event in found:  # what every consumer does with it
        decode_booking_event(json.dumps(event).encode())
    return {e["type"]: e for e in found}


async def test_a_showtime_s_currency_is_beside_every_amount_and_in_its_money_events(start, db, h) -> None:
    cinema = f"Currency {uuid.uuid4().hex[:8]}"
    async with start(currency="GBP", catalogue_cache_seconds=0) as svc:
        own = await svc.showtime_of(currency="USD", startsAt="2031-07-01T20:00:00Z", cinema=cinema)
        default = await svc.showtime_of(startsAt="2031-07-01T21:00:00Z", cinema=cinema)
        for sid, currency in ((own, "USD"), (default, "GBP")):
            seat_map = (await svc.client.get(f"/showtimes/{sid}/seats")).json()
            assert seat_map["currency"] == currency and seat_map["prices"]["STANDARD"]["ADULT"] == 1200
            customer = uuid.uuid4().int % 10**9
            r = await svc.hold(sid, ["F1", "F2"], customer=customer)
            assert r.status_code == 201, r.text
            await svc.book(r.json()["bookingId"], paid=2000)
            sent = await events(db, r.json()["bookingId"])
            assert sent["SeatsHeld"]["data"]["currency"] == currency
            assert sent["BookingConfirmed"]["data"]["currency"] == currency
            [booking] = (await svc.client.get("/bookings", headers=h.auth(customer))).json()["bookings"]
            assert (booking["amountCents"], booking["currency"]) == (2400, currency)
        listed = (await svc.client.get("/showtimes", params={"from": "2031-07-01T00:00:00Z",
                                                              "cinema": cinema})).json()["showtimes"]
        assert [(s["showtimeId"], s["currency"]) for s in listed] == [(own, "USD"), (default, "GBP")]


@pytest.mark.parametrize("currency", ["usd", "EURO", "E1R", ""])
async def test_a_currency_that_is_not_iso_4217_upper_case_is_refused(start, currency, h) -> None:
    async with start() as svc:
        r = await svc.client.post("/admin/showtimes", headers=h.auth(1, "admin"), json={
            "showtimeId": uuid.uuid4().int % 10**9, "title": "T", "startsAt": "2031-07-01T20:00:00Z",
            "priceCents": 100, "rows": {"A": 2}, "currency": currency})
        assert r.status_code == 422, r.text


async def test_a_showtime_of_the_previous_release_is_given_the_deployment_s_currency(start, db, h) -> None:
    async with start(currency="SEK") as svc:
        sid = await svc.showtime()
        await db.execute("UPDATE showtime SET currency = NULL WHERE showtime_id = $1", sid)  # as 0.1.0 made it
        r = await svc.hold(sid, ["F1"])
        held = (await events(db, r.json()["bookingId"]))["SeatsHeld"]
        assert "currency" not in held["data"]  # optional: a consumer does without it
        await sweep(svc.deps)
        assert await db.fetchval("SELECT currency FROM showtime WHERE showtime_id = $1", sid) == "SEK"
        r = await svc.hold(sid, ["F2"])
        assert (await events(db, r.json()["bookingId"]))["SeatsHeld"]["data"]["currency"] == "SEK"


async def test_the_previous_release_s_pods_write_no_currency_on_the_new_schema(start, db, monkeypatch) -> None:
    """0.1.0's consumers refuse a field they do not know: its hold-service pods, still serving while an upgrade
    rolls out (or again after a rollback), call the migrated functions with their own form and get no currency."""
    async with start(currency="USD") as svc:
        sid = await svc.showtime()
        monkeypatch.setattr(repository, "FORM", sql_form(BOOKING_EVENTS, source="hold-service"))  # 0.1.0's
        r = await svc.hold(sid, ["F1"])
        await svc.book(r.json()["bookingId"], paid=1200)
        sent = await events(db, r.json()["bookingId"])
        assert "currency" not in sent["SeatsHeld"]["data"] and "currency" not in sent["BookingConfirmed"]["data"]
        for event in sent.values():  # what 0.1.0's strict reading accepts
            BOOKING_EVENT_TYPES[event["type"]].model_validate_json(json.dumps(event))
