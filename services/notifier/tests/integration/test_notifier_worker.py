"""The faust worker with real Kafka, Postgres and the SMTP sink process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from notifier.adapters.mailer import SmtpMailer
from notifier.domain.messages import Contact
from notifier.domain.rendering import RenderedEmail
from notifier.entrypoints.cli.customers import upsert_all
from ticketing.events import BOOKING_EVENTS_DLQ
from ticketing_testing import eventually

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
    return subprocess.run([sys.executable, "-m", "notifier.entrypoints.cli.tickets", "verify", text, *extra],
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
    public_key = subprocess.run([sys.executable, "-m", "notifier.entrypoints.cli.tickets", "public-key"],
                                capture_output=True, text=True, env={**os.environ, **worker_env}).stdout.strip()
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
    await mailer.send(RenderedEmail("a@b.example", raw))
    await mailer.send(RenderedEmail("a@b.example", raw))
    assert [p.name for p in mail_dir.glob(f"{message_id.strip('<>')}*")] == [f"{message_id.strip('<>')}.eml"]


async def dlq_end(kafka_bootstrap: str) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(BOOKING_EVENTS_DLQ, p) for p in consumer.partitions_for_topic(
            BOOKING_EVENTS_DLQ) or {0}]
        return dict(await consumer.end_offsets(partitions))
    finally:
        await consumer.stop()


async def dlq_event_ids_since(kafka_bootstrap: str, start: dict[TopicPartition, int]) -> set[str]:
    """The `id` header (= eventId) of every DLQ message written after `start`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(start))
        end = await consumer.end_offsets(list(start))
        for tp, offset in start.items():
            consumer.seek(tp, offset)
        ids: set[str] = set()
        while [tp for tp in start if await consumer.position(tp) < end[tp]]:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                ids |= {dict(r.headers).get("id", b"").decode() for r in records}
        return ids
    finally:
        await consumer.stop()


async def test_an_unrenderable_email_keeps_the_credit_and_never_reaches_the_dlq(
        start_worker, publish, make_confirmed, notifier_dsn, pg_connect, new_customer_id, mail_dir,
        kafka_bootstrap):
    """Issue 11: a BookingConfirmed whose e-mail cannot be rendered (a directory row written before
    addresses were checked) and one for a non-ASCII address both credit points and are processed; the
    first e-mail is FAILED with the reason, the second delivered with SMTPUTF8; neither event is
    dead-lettered (before the fix both went to booking-events.DLQ and took the credit back)."""
    broken, accented = new_customer_id(), new_customer_id()
    conn = await pg_connect(notifier_dsn)
    await conn.execute("INSERT INTO customer (customer_id, email, name) VALUES ($1, 'ana@exa mple.com', 'Ana')",
                       broken)
    accented_address = f"josé.{accented}@exämple.com"
    await upsert_all(notifier_dsn, [Contact(accented, accented_address, "José")])
    events = [make_confirmed(broken), make_confirmed(accented)]
    dlq_start = await dlq_end(kafka_bootstrap)
    with start_worker() as worker:
        for e in events:
            await publish(e)
        await eventually(lambda: _processed(conn, [e.eventId for e in events]), timeout=60)
        await eventually(lambda: conn.fetchval("SELECT status = 'SENT' FROM email_outbox WHERE booking_id = $1",
                                               events[1].bookingId), timeout=30)
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(f"{worker.url}/metrics")).text
    assert _sample(metrics, 'ticketing_notifier_emails_failed_total{reason="invalid_address"}') >= 1
    assert _sample(metrics, "ticketing_notifier_emails_sent_total") >= 1
    for e in events:
        assert await conn.fetchval("SELECT points FROM loyalty_points WHERE booking_id = $1", e.bookingId) == 24
    failed = await conn.fetchrow("SELECT status, failure_reason, last_error, message FROM email_outbox"
                                 " WHERE booking_id = $1", events[0].bookingId)
    assert (failed["status"], failed["failure_reason"], failed["message"]) == ("FAILED", "invalid_address", None)
    assert "is not an e-mail address" in failed["last_error"]
    [path] = emls_for(mail_dir, events[1].bookingId)
    assert f"Delivered-To: {accented_address}\r\nX-Sink-SMTPUTF8: yes".encode() in path.read_bytes()
    assert not {str(e.eventId) for e in events} & await dlq_event_ids_since(kafka_bootstrap, dlq_start)


def _sample(metrics: str, name: str) -> float:
    [value] = [line.rsplit(" ", 1)[1] for line in metrics.splitlines() if line.startswith(f"{name} ")]
    return float(value)


async def _processed(conn, event_ids) -> bool:
    return await conn.fetchval("SELECT count(*) FROM processed_event WHERE event_id = ANY($1::uuid[])",
                               event_ids) == len(event_ids)
