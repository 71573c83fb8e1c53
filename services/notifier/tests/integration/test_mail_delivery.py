"""The sender against real Postgres and real SMTP sink processes (the worker runs this same SenderLoop).

E-mails are queued by the real handler (rendering, repository) for customers of the real directory; the
sender runs in the test process so each pass can be observed. Other due e-mails of the shared test
database may be sent in the same passes: assertions only look at this test's rows.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
from notifier.adapters.mailer import SmtpMailer
from notifier.adapters.repository import PgNotifierUnitOfWork
from notifier.bootstrap import notify_policy
from notifier.config import NotifierSettings
from notifier.domain.delivery import RetryPolicy
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from notifier.service_layer.handlers import notify_refund_issued
from notifier.service_layer.sender import SenderLoop
from ticketing.db import create_pool
from ticketing.events import booking_event
from ticketing_testing import eventually, free_port

pytestmark = pytest.mark.integration

POLICY = RetryPolicy(base_seconds=0.2, max_delay_seconds=1.0, max_attempts=10, max_age_seconds=600,
                     max_pause_seconds=1.0)


@pytest_asyncio.fixture(scope="module")
async def pool(notifier_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(notifier_dsn, min_size=1, max_size=3)
    yield pool
    await pool.close()


def sender(pool: asyncpg.Pool, port: int, policy: RetryPolicy = POLICY) -> SenderLoop:
    mailer = SmtpMailer("127.0.0.1", port, "tickets@cinema.example", timeout=5.0)
    return SenderLoop(lambda: PgNotifierUnitOfWork(pool), mailer, policy, batch_size=50, interval=0.2,
                      wake=asyncio.Event())


async def queue_email(pool: asyncpg.Pool, dsn: str, customer_id: int, address: str) -> int:
    """A RefundIssued e-mail for `address`, queued by the real handler; returns the e-mail id."""
    await upsert_all(dsn, [Contact(customer_id, address, "José")])
    event = booking_event("RefundIssued", source="itest", booking_id=uuid.uuid4(), showtime_id=42,
                          customer_id=customer_id, data={"paymentId": uuid.uuid4(), "amountCents": 1250,
                                                         "refundId": f"re_{uuid.uuid4().hex[:8]}"})
    policy = notify_policy(NotifierSettings())
    async with pool.acquire() as conn, conn.transaction():
        await notify_refund_issued(event, PgNotifierUnitOfWork(conn=conn), policy)
    return int(await pool.fetchval("SELECT id FROM email_outbox WHERE event_id = $1", event.eventId))


async def rows(pool: asyncpg.Pool, ids: list[int]) -> list[dict[str, Any]]:
    found = await pool.fetch("SELECT id, status, attempts, failure_reason, last_error, message_id, recipient,"
                             " next_attempt_at > now() AS backing_off FROM email_outbox WHERE id = ANY($1)"
                             " ORDER BY id", ids)
    return [dict(r) for r in found]


async def drain(loop: SenderLoop, pool: asyncpg.Pool, ids: list[int]) -> list[dict[str, Any]]:
    async def settled() -> list[dict[str, Any]] | None:
        await loop.run_pass()
        found = await rows(pool, ids)
        return None if any(r["status"] == "PENDING" for r in found) else found
    settled_rows: list[dict[str, Any]] = await eventually(settled, timeout=30, interval=0.2)
    return settled_rows


def files_for(mail_dir: Path, message_id: str) -> list[bytes]:
    return [p.read_bytes() for p in mail_dir.glob(f"{message_id.strip('<>')}*.eml")]


def unique(prefix: str = "c") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


async def test_a_refused_recipient_in_front_does_not_block_the_next_emails(
        pool, notifier_dsn, smtp_sink, mail_dir, new_customer_id):
    refused = await queue_email(pool, notifier_dsn, new_customer_id(), f"{unique('refused-')}@example.com")
    others = [await queue_email(pool, notifier_dsn, new_customer_id(), f"{unique()}@example.com")
              for _ in range(3)]
    settled = await drain(sender(pool, smtp_sink), pool, [refused, *others])
    first, *rest = settled
    assert (first["status"], first["attempts"], first["failure_reason"]) == ("FAILED", 1, "rejected")
    assert "550" in first["last_error"]
    assert [(r["status"], r["attempts"]) for r in rest] == [("SENT", 1)] * 3
    assert files_for(mail_dir, first["message_id"]) == []
    assert all(len(files_for(mail_dir, r["message_id"])) == 1 for r in rest)


async def test_a_deferred_recipient_is_retried_with_backoff_then_failed_while_the_others_go(
        pool, notifier_dsn, smtp_sink, mail_dir, new_customer_id):
    deferred = await queue_email(pool, notifier_dsn, new_customer_id(), f"{unique('deferred-')}@example.com")
    other = await queue_email(pool, notifier_dsn, new_customer_id(), f"{unique()}@example.com")
    loop = sender(pool, smtp_sink, RetryPolicy(base_seconds=0.2, max_delay_seconds=1.0, max_attempts=3))
    result = await loop.run_pass()
    assert not result.server_down and loop.outages == 0  # a 4xx for one mailbox says nothing about the server
    first, sent = await rows(pool, [deferred, other])
    assert (first["status"], first["attempts"], first["backing_off"]) == ("PENDING", 1, True)
    assert "451" in first["last_error"] and sent["status"] == "SENT"
    [failed, _] = await drain(loop, pool, [deferred, other])
    assert (failed["status"], failed["attempts"], failed["failure_reason"]) == ("FAILED", 3, "attempts_exhausted")
    assert files_for(mail_dir, failed["message_id"]) == []


async def test_a_transient_outage_then_recovery_delivers_everything_once(
        pool, notifier_dsn, start_sink, tmp_path, new_customer_id):
    port = free_port()  # nothing listens there yet: connection refused
    ids = [await queue_email(pool, notifier_dsn, new_customer_id(), f"{unique()}@example.com") for _ in range(4)]
    loop = sender(pool, port)
    for _ in range(12):  # until one of ours met the outage (a due e-mail of another test may come first)
        result = await loop.run_pass()
        assert result.server_down and sum(result.counts.values()) == 1  # one attempt per pass, then stop
        if any(r["attempts"] for r in await rows(pool, ids)):
            break
    assert loop.outages >= 1 and loop.pause_seconds() > 0
    [tried] = [r for r in await rows(pool, ids) if r["attempts"]]
    assert tried["status"] == "PENDING" and tried["backing_off"] and "Connect" in tried["last_error"]
    mail_dir = tmp_path / "mail"
    with start_sink(port, mail_dir):
        settled = await drain(loop, pool, ids)
    assert [r["status"] for r in settled] == ["SENT"] * 4 and loop.outages == 0
    assert sorted(r["attempts"] for r in settled) == [1, 1, 1, 2]
    assert all(len(files_for(mail_dir, r["message_id"])) == 1 for r in settled)


async def test_non_ascii_addresses_go_with_smtputf8_where_offered(
        pool, notifier_dsn, smtp_sink, mail_dir, new_customer_id):
    local, idn = f"{unique('josé')}@exämple.com", f"{unique('ana')}@bücher.de"
    ids = [await queue_email(pool, notifier_dsn, new_customer_id(), a) for a in (local, idn)]
    settled = await drain(sender(pool, smtp_sink), pool, ids)
    assert [r["status"] for r in settled] == ["SENT", "SENT"]
    for row, address in zip(settled, (local, idn), strict=True):
        [data] = files_for(mail_dir, row["message_id"])
        assert f"Delivered-To: {address}\r\nX-Sink-SMTPUTF8: yes\r\n".encode() in data
        assert f"To: José <{address}>".encode() in data  # UTF-8 header, not an encoded-word


async def test_without_smtputf8_an_idn_domain_goes_in_idna_and_a_non_ascii_mailbox_fails_alone(
        pool, notifier_dsn, start_sink, tmp_path, new_customer_id):
    local, idn, plain = f"{unique('josé')}@exämple.com", f"{unique('ana')}@bücher.de", f"{unique()}@example.com"
    ids = [await queue_email(pool, notifier_dsn, new_customer_id(), a) for a in (local, idn, plain)]
    mail_dir = tmp_path / "mail"
    with start_sink(free_port(), mail_dir, "--no-smtputf8") as port:
        settled = await drain(sender(pool, port), pool, ids)
    [(status, reason)] = {(r["status"], r["failure_reason"]) for r in settled[:1]}
    assert (status, reason) == ("FAILED", "smtputf8_unsupported") and "SMTPUTF8" in settled[0]["last_error"]
    assert [r["status"] for r in settled[1:]] == ["SENT", "SENT"]
    [data] = files_for(mail_dir, settled[1]["message_id"])
    ascii_idn = idn.replace("bücher.de", "xn--bcher-kva.de")
    assert f"Delivered-To: {ascii_idn}\r\nX-Sink-SMTPUTF8: no\r\n".encode() in data
    assert f"<{ascii_idn}>".encode() in data and data.isascii()
    assert len(files_for(mail_dir, settled[2]["message_id"])) == 1


def emails_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "notifier.entrypoints.cli.emails", *args], capture_output=True,
                          text=True, env={**os.environ, "NOTIFIER_DATABASE_URL": dsn}, timeout=60)


async def test_operator_requeues_a_failed_email_for_the_corrected_address_once(
        pool, notifier_dsn, smtp_sink, mail_dir, new_customer_id):
    customer = new_customer_id()
    email_id = await queue_email(pool, notifier_dsn, customer, f"{unique('refused-')}@example.com")
    [failed] = await drain(sender(pool, smtp_sink), pool, [email_id])
    assert failed["status"] == "FAILED"
    listed = emails_cli(notifier_dsn, "list", "--status", "FAILED", "--limit", "1000").stdout
    assert any(line.startswith(f"{email_id}\tFAILED\trefund\t1\trejected\t") for line in listed.splitlines())
    fixed = f"{unique()}@example.com"
    await upsert_all(notifier_dsn, [Contact(customer, fixed, "José")])
    done = emails_cli(notifier_dsn, "retry", "--id", str(email_id))
    assert done.returncode == 0 and f"re-queued to {fixed}" in done.stdout, done.stdout + done.stderr
    [requeued] = await rows(pool, [email_id])
    assert (requeued["status"], requeued["attempts"], requeued["recipient"]) == ("PENDING", 0, fixed)
    again = emails_cli(notifier_dsn, "retry", "--id", str(email_id))  # idempotent: already pending
    assert again.returncode == 0 and "not FAILED: nothing to do" in again.stdout
    [sent] = await drain(sender(pool, smtp_sink), pool, [email_id])
    assert (sent["status"], sent["message_id"]) == ("SENT", failed["message_id"])
    [data] = files_for(mail_dir, sent["message_id"])
    assert f"Delivered-To: {fixed}\r\n".encode() in data
    assert "status SENT" in emails_cli(notifier_dsn, "retry", "--id", str(email_id)).stdout
    unknown = emails_cli(notifier_dsn, "retry", "--id", "0")
    assert unknown.returncode == 1 and "no such e-mail" in unknown.stdout


async def test_an_unrenderable_email_is_sent_after_the_address_is_fixed_and_requeued(
        pool, notifier_dsn, smtp_sink, mail_dir, new_customer_id):
    customer = new_customer_id()
    # A directory row written before addresses were checked at the door.
    await pool.execute("INSERT INTO customer (customer_id, email, name) VALUES ($1, 'ana@@example.com', 'Ana')",
                       customer)
    event = booking_event("RefundIssued", source="itest", booking_id=uuid.uuid4(), showtime_id=42,
                          customer_id=customer, data={"paymentId": uuid.uuid4(), "amountCents": 1250,
                                                      "refundId": "re_fix"})
    async with pool.acquire() as conn, conn.transaction():
        await notify_refund_issued(event, PgNotifierUnitOfWork(conn=conn), notify_policy(NotifierSettings()))
    email_id = int(await pool.fetchval("SELECT id FROM email_outbox WHERE event_id = $1", event.eventId))
    [failed] = await rows(pool, [email_id])
    assert (failed["status"], failed["failure_reason"]) == ("FAILED", "invalid_address")
    still = emails_cli(notifier_dsn, "retry", "--id", str(email_id))
    assert still.returncode == 1 and "still cannot be rendered" in still.stdout
    fixed = f"{unique()}@example.com"
    await upsert_all(notifier_dsn, [Contact(customer, fixed, "Ana")])
    assert emails_cli(notifier_dsn, "retry", "--id", str(email_id)).returncode == 0
    [sent] = await drain(sender(pool, smtp_sink), pool, [email_id])
    assert (sent["status"], sent["recipient"]) == ("SENT", fixed)
    [data] = files_for(mail_dir, sent["message_id"])
    assert b"re_fix" in data and f"Delivered-To: {fixed}\r\n".encode() in data
