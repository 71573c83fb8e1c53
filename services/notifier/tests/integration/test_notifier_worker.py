"""The faust worker with real Kafka, Postgres and the SMTP sink process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import pytest
from notifier.adapters.mailer import SmtpMailer
from notifier.customers import upsert_all
from notifier.domain.messages import Contact
from ticketing.testing import eventually

pytestmark = pytest.mark.integration


async def add_customer(dsn: str, customer_id: int) -> str:
    email = f"c{customer_id}@example.com"
    await upsert_all(dsn, [Contact(customer_id, email, f"Customer {customer_id}")])
    return email


async def counts(conn, booking_id) -> tuple[int, int, int]:
    row = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM loyalty_points WHERE booking_id = $1) AS points,"
        " (SELECT count(*) FROM email_outbox WHERE booking_id = $1) AS emails,"
        " (SELECT count(*) FROM email_outbox WHERE booking_id = $1 AND status = 'SENT') AS sent", booking_id)
    return row["points"], row["emails"], row["sent"]


def emls_for(mail_dir, booking_id) -> list:
    return [p for p in mail_dir.glob("*.eml") if str(booking_id).encode() in p.read_bytes()]


def verify_cli(text: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "notifier.tickets", "verify", text, *extra],
                          capture_output=True, text=True, timeout=30)


async def test_ticket_email_with_verifiable_qr_and_points(
        start_worker, publish, make_confirmed, notifier_dsn, pg_connect, new_customer_id, mail_dir, eml,
        worker_env):
    customer = new_customer_id()
    email = await add_customer(notifier_dsn, customer)
    event = make_confirmed(customer, seats=["C3", "C4", "C5"], amount=3600)
    conn = await pg_connect(notifier_dsn)
    with start_worker():
        await publish(event)
        await eventually(lambda: _ready(conn, event.bookingId, mail_dir), timeout=60)
    [path] = emls_for(mail_dir, event.bookingId)
    msg = eml.parse(path)
    assert str(event.bookingId) in msg["Subject"] and msg["To"].addresses[0].addr_spec == email
    points = await conn.fetchval("SELECT points FROM loyalty_points WHERE booking_id = $1", event.bookingId)
    assert points == 36
    [text] = eml.qr_texts(msg)
    public_key = subprocess.run([sys.executable, "-m", "notifier.tickets", "public-key"], capture_output=True,
                                text=True, env={**os.environ, **worker_env}).stdout.strip()
    ok = verify_cli(text, "--public-key", public_key)
    assert ok.returncode == 0, ok.stdout
    assert '"seats": ["C3", "C4", "C5"]' in ok.stdout and str(event.bookingId) in ok.stdout
    payload, signature = text.split(".")
    tampered = verify_cli(f"{payload[:-2]}{'AA' if payload[-2:] != 'AA' else 'BB'}.{signature}",
                          "--public-key", public_key)
    assert tampered.returncode == 1 and "INVALID" in tampered.stdout


async def _ready(conn, booking_id, mail_dir) -> bool:
    return await counts(conn, booking_id) == (1, 1, 1) and len(emls_for(mail_dir, booking_id)) == 1


async def test_duplicates_give_one_email_and_one_points_row(
        start_worker, publish, make_confirmed, notifier_dsn, pg_connect, new_customer_id, mail_dir):
    customer = new_customer_id()
    await add_customer(notifier_dsn, customer)
    event = make_confirmed(customer)
    # The same event three times (relay re-publish) plus another event id for the same booking.
    same_booking = make_confirmed(customer, booking_id=event.bookingId, showtime_id=event.showtimeId)
    conn = await pg_connect(notifier_dsn)
    with start_worker():
        for e in (event, event, same_booking, event):
            await publish(e)
        await eventually(lambda: _ready(conn, event.bookingId, mail_dir), timeout=60)
        await asyncio.sleep(3)  # let any duplicate e-mail that would be sent arrive
    assert await counts(conn, event.bookingId) == (1, 1, 1)
    assert len(emls_for(mail_dir, event.bookingId)) == 1


async def test_unknown_customer_is_processed_without_email(
        start_worker, publish, make_confirmed, notifier_dsn, pg_connect, new_customer_id):
    event = make_confirmed(new_customer_id())
    conn = await pg_connect(notifier_dsn)
    with start_worker():
        await publish(event)
        await eventually(lambda: conn.fetchval(
            "SELECT count(*) FROM processed_event WHERE event_id = $1", event.eventId), timeout=60)
    assert await counts(conn, event.bookingId) == (1, 0, 0)


async def test_resent_message_id_is_one_file_in_the_sink(smtp_sink, mail_dir, eml):
    """The sender's at-most-one re-send after a crash carries the same Message-ID: one file."""
    message_id = f"<{uuid.uuid4()}.ticket@notifier.ticketing>"
    raw = (f"From: t@x.example\r\nTo: a@b.example\r\nSubject: s\r\nMessage-ID: {message_id}\r\n"
           "\r\nhi\r\n").encode()
    mailer = SmtpMailer("127.0.0.1", smtp_sink, "t@x.example")
    await mailer.send("a@b.example", raw)
    await mailer.send("a@b.example", raw)
    assert [p.name for p in mail_dir.glob(f"{message_id.strip('<>')}*")] == [f"{message_id.strip('<>')}.eml"]
