"""On real Postgres, through the notifier's own booking-events consumer (its inbox): a customer put in the
directory with `customers upsert --locale es` gets a Spanish ticket, then ONE Spanish cancellation e-mail with
the refund, however many cancellation events come, and no separate refund e-mail; the database itself allows
one cancellation e-mail per booking; an operator's re-queue renders the cancellation again with the refund."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from email import policy

import asyncpg
import pytest
import pytest_asyncio
from aiokafka import ConsumerRecord
from notifier.adapters.repository import PgNotifierUnitOfWork
from notifier.bootstrap import notify_policy
from notifier.config import NotifierSettings
from notifier.entrypoints.consumer import booking_events_processor
from notifier.service_layer.ports import Deps
from ticketing.db import create_pool
from ticketing.events import BOOKING_EVENTS, booking_event, outgoing

pytestmark = pytest.mark.integration
DETAILS = {"title": "Dune: Part Three", "cinema": "Madrid Kinépolis", "hall": "Sala 3",
           "startsAt": "2027-03-01T19:30:00Z", "timeZone": "Europe/Madrid",
           "tickets": [{"seat": "K1", "category": "VIP", "ticketType": "ADULT", "priceCents": 1800},
                       {"seat": "K2", "category": "VIP", "ticketType": "CHILD", "priceCents": 1300}]}


@pytest_asyncio.fixture(scope="module")
async def pool(notifier_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(notifier_dsn, min_size=1, max_size=3)
    yield pool
    await pool.close()


def record(event) -> ConsumerRecord:  # type: ignore[no-untyped-def,type-arg]
    value = outgoing(event).value
    return ConsumerRecord(BOOKING_EVENTS, 0, 0, 0, 0, str(event.bookingId).encode(), value, None, 0, len(value), ())


def consumer_inbox(pool: asyncpg.Pool):  # type: ignore[no-untyped-def]
    """The notifier's booking-events consumer as bootstrap.py wires it, without its mailer (the e-mails stay
    in email_outbox)."""
    settings = NotifierSettings()
    deps = Deps(settings=settings, uow=lambda: PgNotifierUnitOfWork(pool), policy=notify_policy(settings),
                mailer=None)  # type: ignore[arg-type]
    return booking_events_processor(deps, pool).inbox


def event(type_: str, booking: uuid.UUID, customer: int, **data):  # type: ignore[no-untyped-def]
    return booking_event(type_, source="itest", booking_id=booking, showtime_id=42, customer_id=customer, data=data)


def cli(dsn: str, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", f"notifier.entrypoints.cli.{module}", *args], capture_output=True,
                          text=True, env={**os.environ, "NOTIFIER_DATABASE_URL": dsn}, timeout=60)


async def body_of(pool: asyncpg.Pool, booking: uuid.UUID, kind: str) -> str:
    raw = await pool.fetchval("SELECT message FROM email_outbox WHERE booking_id = $1 AND kind = $2", booking, kind)
    msg = email.message_from_bytes(bytes(raw), policy=policy.default)
    return str(msg.get_body(("plain",)).get_content()).replace("\xa0", " ")  # type: ignore[union-attr]


async def test_a_spanish_customer_s_ticket_and_one_cancellation_e_mail(pool, notifier_dsn, new_customer_id) -> None:  # type: ignore[no-untyped-def]
    customer, booking, payment = new_customer_id(), uuid.uuid4(), uuid.uuid4()
    upsert = cli(notifier_dsn, "customers", "upsert", "--id", str(customer), "--email", f"c{customer}@example.com",
                 "--name", "Ana", "--locale", "es")
    assert upsert.returncode == 0, upsert.stderr
    listed = cli(notifier_dsn, "customers", "list").stdout
    assert f"{customer}\tc{customer}@example.com\tAna\tes" in listed
    inbox = consumer_inbox(pool)
    events = [event("BookingConfirmed", booking, customer, holdId=uuid.uuid4(), seats=["K1", "K2"], amountCents=3100,
                    discountCents=0, paymentId=payment, seatMapVersion=3, **DETAILS),
              event("BookingCancelled", booking, customer, holdId=uuid.uuid4(), seats=["K1", "K2"],
                    reason="SHOWTIME_CANCELLED", paymentId=payment, seatMapVersion=4)]
    events += [events[1],  # redelivered
               event("BookingCancelled", booking, customer, holdId=uuid.uuid4(), seats=["K1", "K2"],
                     reason="CUSTOMER", paymentId=payment, seatMapVersion=5),
               event("RefundIssued", booking, customer, paymentId=payment, amountCents=3100, refundId="re_es")]
    assert [await inbox.apply(record(e)) for e in events] == ["applied", "applied", "duplicate", "applied", "applied"]
    kinds = await pool.fetch("SELECT kind FROM email_outbox WHERE booking_id = $1 ORDER BY id", booking)
    assert [r["kind"] for r in kinds] == ["ticket", "cancellation"]
    ticket = await body_of(pool, booking, "ticket")
    assert "Comienza: lunes, 1 de marzo de 2027, 20:30" in ticket and "K2: VIP, Niño, 13,00 €" in ticket
    cancellation = await body_of(pool, booking, "cancellation")
    assert "Lo sentimos: esta función se ha cancelado" in cancellation
    assert "Te reembolsamos 31,00 €, el importe íntegro que pagaste" in cancellation
    assert "Película: Dune: Part Three" in cancellation
    with pytest.raises(asyncpg.UniqueViolationError):  # the database's own rule: one per booking
        await pool.execute("INSERT INTO email_outbox (event_id, kind, booking_id, customer_id, recipient, message_id,"
                           " message) VALUES ($1, 'cancellation', $2, $3, 'x@example.com', $4, '\\x00')",
                           uuid.uuid4(), booking, customer, f"<{uuid.uuid4()}@t>")


async def test_an_operator_s_requeue_renders_the_cancellation_again_with_its_refund(  # type: ignore[no-untyped-def]
        pool, notifier_dsn, new_customer_id) -> None:
    customer, booking, payment = new_customer_id(), uuid.uuid4(), uuid.uuid4()
    # A directory row written before addresses were checked at the door: the e-mail fails at first.
    await pool.execute("INSERT INTO customer (customer_id, email, name, locale) VALUES ($1, 'a@@x.com', 'Minh', 'vi')",
                       customer)
    inbox = consumer_inbox(pool)
    for e in (event("BookingConfirmed", booking, customer, holdId=uuid.uuid4(), seats=["K1"], amountCents=1800,
                    discountCents=0, paymentId=payment, seatMapVersion=3, **DETAILS),
              event("BookingCancelled", booking, customer, holdId=uuid.uuid4(), seats=["K1"], reason="CUSTOMER",
                    paymentId=payment, seatMapVersion=4)):
        await inbox.apply(record(e))
    email_id = await pool.fetchval("SELECT id FROM email_outbox WHERE booking_id = $1 AND kind = 'cancellation' "
                                   "AND status = 'FAILED'", booking)
    await pool.execute("UPDATE customer SET email = $2 WHERE customer_id = $1", customer, f"m{customer}@example.com")
    assert cli(notifier_dsn, "emails", "retry", "--id", str(email_id)).returncode == 0
    body = await body_of(pool, booking, "cancellation")
    assert "Theo yêu cầu của bạn" in body and "Chúng tôi hoàn lại 18,00 €" in body
