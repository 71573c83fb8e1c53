"""Customers of the identity provider (docs/sign-in.md), against the real database: a subject gets one customer id
at its first sign-in (asked by another service, POST /customer-ids), its contact is kept and updated, and the
notifier reads a booking's buyer contact with the shared key (GET /buyer-contacts/{bookingId})."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

KEY = "k" * 40


def subject(**contact: Any) -> dict[str, Any]:
    return {"issuer": "https://idp.example/realms/chain", "subject": f"sub-{uuid.uuid4()}", **contact}


async def test_a_subject_gets_one_customer_id_even_asked_at_once(start: Any, h: Any) -> None:
    async with start() as svc:
        body = subject(email="ana@example.com", emailVerified=True, name="Ana", locale="es")
        answers = await asyncio.gather(*(svc.client.post("/customer-ids", json=body, headers=h.auth(0, "service"))
                                         for _ in range(8)))
        ids = {r.json()["customerId"] for r in answers}
        assert [r.status_code for r in answers] == [200] * 8 and len(ids) == 1
        assert ids.pop() >= 10**12  # clear of the small ids of dev tokens and the directory
        other = await svc.client.post("/customer-ids", json=subject(), headers=h.auth(0, "service"))
        assert other.json()["customerId"] not in ids
        refused = await svc.client.post("/customer-ids", json=body, headers=h.auth(h.new_id()))
        assert refused.status_code == 403  # a customer cannot ask


async def test_the_notifier_reads_the_buyers_latest_contact_with_the_key(start: Any, h: Any) -> None:
    async with start(contacts_api_key=KEY) as svc:
        body = subject(email="old@example.com", emailVerified=False, name="Bao", locale="vi")
        made = await svc.client.post("/customer-ids", json=body, headers=h.auth(0, "service"))
        customer = made.json()["customerId"]
        await svc.client.post("/customer-ids", json={**body, "email": "bao@example.com", "emailVerified": True},
                              headers=h.auth(0, "service"))
        sid = await svc.showtime()
        held = await svc.hold(sid, ["F1"], customer=customer)
        booking = held.json()["bookingId"]
        r = await svc.client.get(f"/buyer-contacts/{booking}", headers={"X-Api-Key": KEY})
        assert r.status_code == 200, r.text
        assert r.json() == {"bookingId": booking, "customerId": customer, "email": "bao@example.com",
                            "emailVerified": True, "name": "Bao", "locale": "vi"}
        assert (await svc.client.get(f"/buyer-contacts/{booking}", headers={"X-Api-Key": "x" * 40})).status_code == 401
        assert (await svc.client.get(f"/buyer-contacts/{booking}")).status_code == 401
        dev = (await svc.hold(sid, ["F3"])).json()["bookingId"]  # a dev token's customer: no contact here
        assert (await svc.client.get(f"/buyer-contacts/{dev}", headers={"X-Api-Key": KEY})).status_code == 404


async def test_without_a_key_no_contact_is_served(start: Any, h: Any) -> None:
    async with start() as svc:
        r = await svc.client.get(f"/buyer-contacts/{uuid.uuid4()}", headers={"X-Api-Key": ""})
        assert r.status_code == 404
