"""The customer journey, end to end with real processes: hold -> checkout -> gateway payment ->
BookingConfirmed -> ticket e-mail with a signed QR in the sink's folder, and loyalty points credited.

Processes (real Kafka, Postgres, Redis; the TEST database; free ports; stack.py): hold-service API + worker,
payment-service API + worker, the gateway simulator, the SMTP sink and the notifier worker.
Only the HTTP contract (docs/api) is used to drive it; outcomes are asserted in Postgres and on disk.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
import zxingcpp
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from PIL import Image
from ticketing.auth import issue_token
from ticketing.tickets import (
    private_key_from_seed,
    public_key_from_text,
    public_key_text,
    verify_ticket,
)
from ticketing_testing import env, eventually

from .stack import QR_SEED, start_stack

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

LOGS = Path(__file__).resolve().parents[2] / "var" / "log" / "tests" / "e2e-ticket-journey"


@pytest.fixture(scope="module")
def journey(migrated_dsn: Any, kafka_bootstrap: str, redis_url: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with start_stack(migrated_dsn, bootstrap=kafka_bootstrap, redis_url=redis_url, jwt_secret=env("JWT_SECRET"),
                     mail_dir=tmp_path_factory.mktemp("journey-mail"), logs=LOGS,
                     services=("smtp", "sim", "hold", "pay", "notifier")) as stack:
        yield {"url": stack.url, "dsn": {"NOTIFIER_DATABASE_URL": stack.dsn["notifier"],
                                         "HOLD_DATABASE_URL": stack.dsn["hold"],
                                         "PAYMENT_DATABASE_URL": stack.dsn["payment"]},
               "mail_dir": stack.mail_dir, "jwt": stack.jwt_secret}


def _auth(secret: str, sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(secret, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


async def _fetchval(dsn: str, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


def _ticket_emails(mail_dir: Path, booking_id: str) -> list[Path]:
    return [p for p in mail_dir.glob("*.eml") if booking_id.encode() in p.read_bytes()]


async def test_hold_checkout_pay_then_ticket_email_and_points(journey: dict[str, Any]) -> None:
    url, dsn, secret = journey["url"], journey["dsn"], journey["jwt"]
    showtime, customer = 10**9 + uuid.uuid4().int % 10**9, 10**11 + uuid.uuid4().int % 10**11
    await upsert_all(dsn["NOTIFIER_DATABASE_URL"], [Contact(customer, f"c{customer}@example.com", "Journey")])
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(f"{url['hold']}/admin/showtimes", headers=_auth(secret, 1, "admin"), json={
            "showtimeId": showtime, "title": "Journey", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": 1200, "rows": {"F": 8}})
        assert r.status_code == 201, r.text
        hold = await _paid_hold(c, url, secret, showtime, customer, ["F5", "F6"])
    booking = hold["bookingId"]
    await eventually(lambda: _sent(dsn["NOTIFIER_DATABASE_URL"], journey["mail_dir"], booking), timeout=90)
    points = await _fetchval(dsn["NOTIFIER_DATABASE_URL"],
                             "SELECT points FROM loyalty_points WHERE booking_id = $1::uuid", booking)
    assert points == hold["amountCents"] // 100
    [path] = _ticket_emails(journey["mail_dir"], booking)
    msg = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    assert booking in msg["Subject"]
    text = _qr_text(journey["mail_dir"], booking)
    key = public_key_from_text(public_key_text(private_key_from_seed(QR_SEED)))
    payload = verify_ticket(text, key)
    assert (payload.booking_id, payload.showtime_id) == (booking, showtime)
    assert sorted(payload.seats) == ["F5", "F6"]


async def test_the_e_mailed_qr_admits_its_group_once_at_the_door(journey: dict[str, Any]) -> None:
    """The QR code of the ticket e-mail, scanned: the door admits it once (hold-service verifies what the notifier
    signed, one key pair), a second door is told when and where, and TicketCheckedIn reaches Kafka."""
    url, dsn, secret = journey["url"], journey["dsn"], journey["jwt"]
    showtime, customer = 10**9 + uuid.uuid4().int % 10**9, 10**11 + uuid.uuid4().int % 10**11
    await upsert_all(dsn["NOTIFIER_DATABASE_URL"], [Contact(customer, f"d{customer}@example.com", "Door")])
    starts = (datetime.now(UTC) + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(f"{url['hold']}/admin/showtimes", headers=_auth(secret, 1, "admin"), json={
            "showtimeId": showtime, "title": "Door", "startsAt": starts, "priceCents": 1000, "rows": {"D": 4}})
        assert r.status_code == 201, r.text
        booking = (await _paid_hold(c, url, secret, showtime, customer, ["D1", "D2"]))["bookingId"]
        await eventually(lambda: _sent(dsn["NOTIFIER_DATABASE_URL"], journey["mail_dir"], booking), timeout=90)
        text = _qr_text(journey["mail_dir"], booking)
        staff = _auth(secret, 5, "staff")
        keys = (await c.get(f"{url['hold']}/tickets/public-key")).json()
        assert keys["publicKey"] == public_key_text(private_key_from_seed(QR_SEED))
        r = await c.post(f"{url['hold']}/checkins", headers=staff, json={"ticket": text, "showtimeId": showtime,
                                                                         "door": "North"})
        assert r.status_code == 200 and r.json()["seats"] == ["D1", "D2"], r.text
        r = await c.post(f"{url['hold']}/checkins", headers=staff, json={"ticket": text, "showtimeId": showtime,
                                                                         "door": "South"})
        assert r.status_code == 409 and (r.json()["error"], r.json()["door"]) == ("ALREADY_CHECKED_IN", "North")
    published = ("SELECT count(*) FROM outbox WHERE message_key = $1 AND published_at IS NOT NULL"
                 " AND convert_from(payload, 'UTF8')::jsonb->>'type' = 'TicketCheckedIn'")
    assert await eventually(lambda: _is(1, _fetchval(dsn["HOLD_DATABASE_URL"], published, booking)), timeout=30)


async def _is(expected: Any, value: Any) -> bool:
    return bool(await value == expected)


async def _paid_hold(c: httpx.AsyncClient, url: dict[str, str], secret: str, showtime: int, customer: int,
                     seats: list[str]) -> dict[str, Any]:
    """Hold `seats`, check out and pay at the gateway; the hold (BOOKED once the events have flowed)."""
    r = await c.post(f"{url['hold']}/showtimes/{showtime}/holds", headers=_auth(secret, customer),
                     json={"seats": seats})
    assert r.status_code == 201, r.text
    hold = r.json()
    r = await c.post(f"{url['pay']}/holds/{hold['holdId']}/checkout", json={},
                     headers={**_auth(secret, customer), "Idempotency-Key": uuid.uuid4().hex})
    assert r.status_code == 201, r.text
    session_id = urlsplit(r.json()["redirectUrl"]).path.rstrip("/").rsplit("/", 1)[-1]
    r = await c.post(f"{url['sim']}/sim/sessions/{session_id}/pay", json={"outcome": "succeeded", "delivery": "normal"})
    assert r.status_code == 200, r.text
    return hold


def _qr_text(mail_dir: Path, booking: str) -> str:
    """The text of the QR code in the booking's ticket e-mail, as a scanner reads the picture."""
    [path] = _ticket_emails(mail_dir, booking)
    msg = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    [png] = [p for p in msg.iter_attachments() if p.get_content_type() == "image/png"]  # type: ignore[attr-defined]
    # zxing may report the one QR code more than once (found at two scales): one distinct text is what counts.
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(png.get_content())), formats=zxingcpp.BarcodeFormat.QRCode)
    [text] = {r.text for r in found}
    return text


async def test_one_request_id_follows_a_booking_through_every_service(journey: dict[str, Any]) -> None:
    """The X-Request-ID of the request that caused an event is the event's `x-request-id` header, and the
    consumers carry it on: hold -> SeatsHeld; the gateway's callback -> PaymentSucceeded -> BookingConfirmed
    (written by hold-service's SQL, from the event's id) -> the notifier's log lines; cancel -> SeatsReleased."""
    url, dsn, secret = journey["url"], journey["dsn"], journey["jwt"]
    showtime, customer = 10**9 + uuid.uuid4().int % 10**9, 10**11 + uuid.uuid4().int % 10**11
    await upsert_all(dsn["NOTIFIER_DATABASE_URL"], [Contact(customer, f"r{customer}@example.com", "Traced")])
    rid = {step: f"e2e-{step}-{uuid.uuid4().hex[:12]}" for step in ("hold", "checkout", "cancel-hold", "cancel")}
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(f"{url['hold']}/admin/showtimes", headers=_auth(secret, 1, "admin"), json={
            "showtimeId": showtime, "title": "Traced", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": 900, "rows": {"G": 4}})
        assert r.status_code == 201, r.text
        r = await c.post(f"{url['hold']}/showtimes/{showtime}/holds", json={"seats": ["G1"]},
                         headers={**_auth(secret, customer), "X-Request-ID": rid["hold"]})
        assert r.status_code == 201 and r.headers["X-Request-ID"] == rid["hold"], r.text
        hold = r.json()
        r = await c.post(f"{url['pay']}/holds/{hold['holdId']}/checkout", json={},
                         headers={**_auth(secret, customer), "Idempotency-Key": uuid.uuid4().hex,
                                  "X-Request-ID": rid["checkout"]})
        assert r.status_code == 201, r.text
        session_id = urlsplit(r.json()["redirectUrl"]).path.rstrip("/").rsplit("/", 1)[-1]
        r = await c.post(f"{url['sim']}/sim/sessions/{session_id}/pay",
                         json={"outcome": "succeeded", "delivery": "normal"})
        assert r.status_code == 200, r.text
        r = await c.post(f"{url['hold']}/showtimes/{showtime}/holds", json={"seats": ["G3"]},
                         headers={**_auth(secret, customer), "X-Request-ID": rid["cancel-hold"]})
        assert r.status_code == 201, r.text
        other = r.json()
        r = await c.delete(f"{url['hold']}/holds/{other['holdId']}",
                           headers={**_auth(secret, customer), "X-Request-ID": rid["cancel"]})
        assert r.status_code == 204, r.text
    booking = hold["bookingId"]
    await eventually(lambda: _sent(dsn["NOTIFIER_DATABASE_URL"], journey["mail_dir"], booking), timeout=90)

    held = await _request_ids(dsn["HOLD_DATABASE_URL"], booking)
    paid = await _request_ids(dsn["PAYMENT_DATABASE_URL"], booking)
    assert held["SeatsHeld"] == [rid["hold"]]
    [callback] = paid["PaymentSucceeded"]  # the gateway's callback request's id (the gateway sent none)
    assert callback and held["BookingConfirmed"] == [callback]
    released = await _request_ids(dsn["HOLD_DATABASE_URL"], other["bookingId"])
    assert released == {"SeatsHeld": [rid["cancel-hold"]], "SeatsReleased": [rid["cancel"]]}
    notifier_log = (LOGS / "notifier-worker.log").read_text()
    assert any(callback in line and "BookingConfirmed" in line for line in notifier_log.splitlines())


async def _request_ids(dsn: str, booking: str) -> dict[str, list[str | None]]:
    """type -> the x-request-id header of each of the booking's outbox rows, in order."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT convert_from(payload, 'UTF8')::jsonb->>'type' AS type,"
            " (SELECT h->>1 FROM jsonb_array_elements(headers) h WHERE h->>0 = 'x-request-id') AS rid"
            " FROM outbox WHERE convert_from(payload, 'UTF8')::jsonb->>'bookingId' = $1 ORDER BY id", booking)
    finally:
        await conn.close()
    found: dict[str, list[str | None]] = {}
    for row in rows:
        found.setdefault(row["type"], []).append(row["rid"])
    return found


async def _sent(dsn: str, mail_dir: Path, booking: str) -> bool:
    sent = await _fetchval(dsn, "SELECT count(*) FROM email_outbox WHERE booking_id = $1::uuid"
                                " AND status = 'SENT'", booking)
    return bool(sent == 1 and len(_ticket_emails(mail_dir, booking)) == 1)
