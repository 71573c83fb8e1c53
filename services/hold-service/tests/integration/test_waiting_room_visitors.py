"""The waiting room before signing in, against real Redis and Postgres: a visitor joins without a token and
sees his place; once admitted, the first customer whose token comes with the ticket claims it for good; joins
without a token have their own limit per address; a customer's ticket stays his own as before."""

from __future__ import annotations

import random

import pytest
from prometheus_client.parser import text_string_to_metric_families
from ticketing_testing import eventually

pytestmark = pytest.mark.integration


def refusals(metrics: str) -> dict[str, float]:
    return {s.labels["limit"]: s.value for family in text_string_to_metric_families(metrics)
            for s in family.samples if s.name == "ticketing_hold_rate_limited_total"}


def address() -> str:
    return f"100.{random.randint(64, 127)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


async def test_a_visitor_waits_and_the_first_customer_to_sign_in_claims_his_place(start, h, rooms) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        room = await svc.client.get(f"/showtimes/{sid}/waiting-room")  # no token: the page asks first
        assert room.status_code == 200 and room.json()["enabled"] is True
        joined = await svc.client.post(f"/showtimes/{sid}/queue")  # no token
        assert joined.status_code == 202 and joined.json()["position"] == 1, joined.text
        ticket = joined.json()["ticket"]
        b = h.new_id()
        second = (await rooms.join(svc.client, sid, b)).json()
        assert second["position"] == 2

        async def visitor_admitted() -> dict | None:
            r = await svc.client.get(f"/queue/{ticket}")
            assert r.status_code == 200, r.text
            return r.json() if r.json()["admitted"] else None
        seen = await eventually(visitor_admitted, timeout=10, interval=0.05)
        assert seen["signIn"] is True and seen["admissionToken"] is None and seen["expiresAt"]
        waiting = (await rooms.poll(svc.client, second["ticket"], b)).json()
        assert waiting["admitted"] is False and waiting["position"] == 1 and "signIn" not in waiting

        c, d = h.new_id(), h.new_id()
        claimed = await rooms.poll(svc.client, ticket, c)
        assert claimed.status_code == 200 and claimed.json()["admitted"] is True, claimed.text
        token = claimed.json()["admissionToken"]
        assert token and "signIn" not in claimed.json()
        again = await rooms.poll(svc.client, ticket, c)  # his now: asked again, the same slot
        assert again.status_code == 200 and again.json()["expiresAt"] == claimed.json()["expiresAt"]
        other = await rooms.poll(svc.client, ticket, d)
        assert other.status_code == 404 and other.json()["error"] == "NOT_FOUND"  # as a stranger's ticket
        assert (await svc.client.get(f"/queue/{ticket}")).status_code == 404
        not_his = await svc.client.post(f"/showtimes/{sid}/holds", json={"seats": ["F1"]},
                                        headers={**h.auth(d), "X-Admission-Token": token})
        assert not_his.status_code == 403, not_his.text  # the token is bound to c
        held = await svc.client.post(f"/showtimes/{sid}/holds", json={"seats": ["F1"]},
                                     headers={**h.auth(c), "X-Admission-Token": token})
        assert held.status_code == 201, held.text
        still_waiting = (await rooms.poll(svc.client, second["ticket"], b)).json()
        assert still_waiting["admitted"] is False  # c's slot is the visitor's: the room's limit holds


async def test_joins_without_a_token_have_their_own_limit_per_address(start, h, rooms) -> None:
    async with start(waiting_room_anonymous_joins_per_ip_per_minute=3) as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        client = svc.client_from(address())
        before = refusals((await svc.client.get("/metrics")).text)
        codes = [(await client.post(f"/showtimes/{sid}/queue")).status_code for _ in range(5)]
        assert codes == [202, 202, 202, 429, 429]
        refused = await client.post(f"/showtimes/{sid}/queue")
        assert refused.json()["error"] == "RATE_LIMITED" and int(refused.headers["Retry-After"]) >= 1
        after = refusals((await svc.client.get("/metrics")).text)
        assert {k: after[k] - before[k] for k in after} == {"customer": 0, "address": 0, "anonymous": 3}
        tickets = {(await client.post(f"/showtimes/{sid}/queue", headers=h.auth(h.new_id()))).status_code
                   for _ in range(3)}
        assert tickets == {202}  # customers behind the same address are not pushed out by the flood
        await client.aclose()


async def test_a_customers_ticket_is_still_his_own(start, h, rooms) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        a = h.new_id()
        ticket = (await rooms.join(svc.client, sid, a)).json()["ticket"]
        anonymous = await svc.client.get(f"/queue/{ticket}")
        assert anonymous.status_code == 401  # a customer's ticket: his token, as before
        token = await rooms.admitted(svc.client, ticket, a)
        mine = (await rooms.poll(svc.client, ticket, a)).json()
        assert set(mine) == {"admitted", "position", "estimatedWaitSeconds", "admissionToken", "expiresAt",
                             "soldOut", "opensAt"}
        held = await svc.client.post(f"/showtimes/{sid}/holds", json={"seats": ["F2"]},
                                     headers={**h.auth(a), "X-Admission-Token": token})
        assert held.status_code == 201, held.text
        staff = await svc.client.post(f"/showtimes/{sid}/queue", headers=h.auth(9, "staff"))
        assert staff.status_code == 403  # a token of the wrong kind is refused, not taken for a visitor


async def test_a_visitor_is_let_through_when_the_room_is_turned_off(start, h, rooms) -> None:
    async with start() as svc:
        sid = await svc.showtime()
        await rooms.configure(svc, sid, 1)
        await rooms.join(svc.client, sid, h.new_id())  # let in first: the visitor waits behind him
        ticket = (await svc.client.post(f"/showtimes/{sid}/queue")).json()["ticket"]
        await rooms.configure(svc, sid, 1, enabled=False)

        async def through() -> dict | None:
            r = await svc.client.get(f"/queue/{ticket}")
            assert r.status_code == 200, r.text
            return r.json() if r.json()["admitted"] else None
        seen = await eventually(through, timeout=10, interval=0.05)
        assert seen["admissionToken"] is None and "signIn" not in seen  # no room: the map, no sign-in asked
