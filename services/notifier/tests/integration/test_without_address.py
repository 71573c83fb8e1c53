"""A booking event with no address anywhere, against the real database: recorded once per event (a redelivery
adds nothing), listed by `customers missing` with the address the directory has since, and counted."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest_asyncio
from notifier.adapters.repository import PgNotifierUnitOfWork
from notifier.bootstrap import notify_policy
from notifier.config import NotifierSettings
from notifier.domain.messages import Contact
from notifier.entrypoints.cli import customers
from notifier.entrypoints.cli.customers import upsert_all
from notifier.service_layer.handlers import notify_booking_confirmed
from notifier.service_layer.metrics import BOOKINGS_WITHOUT_ADDRESS
from ticketing.db import create_pool
from ticketing.events import booking_event


@pytest_asyncio.fixture(scope="module")
async def pool(notifier_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(notifier_dsn, min_size=1, max_size=3)
    yield pool
    await pool.close()


async def test_a_booking_sent_to_nobody_is_recorded_listed_and_counted(pool: asyncpg.Pool, notifier_dsn: str,
                                                                       monkeypatch: Any, capsys: Any) -> None:
    customer = random.randint(10**12, 2**52)
    event = booking_event("BookingConfirmed", source="itest", booking_id=uuid.uuid4(), showtime_id=42,
                          customer_id=customer, data={"holdId": uuid.uuid4(), "seats": ["F5"], "amountCents": 1200,
                                                      "discountCents": 0, "paymentId": uuid.uuid4(),
                                                      "seatMapVersion": 3})
    counted = BOOKINGS_WITHOUT_ADDRESS.labels("BookingConfirmed")._value.get()
    policy = notify_policy(NotifierSettings())
    for _ in range(2):  # a redelivery of the same event
        async with pool.acquire() as conn, conn.transaction():
            await notify_booking_confirmed(event, PgNotifierUnitOfWork(conn=conn), policy)
    rows = await pool.fetch("SELECT booking_id, customer_id, event_type FROM booking_without_address"
                            " WHERE event_id = $1", event.eventId)
    assert [tuple(r) for r in rows] == [(event.bookingId, customer, "BookingConfirmed")]
    assert BOOKINGS_WITHOUT_ADDRESS.labels("BookingConfirmed")._value.get() == counted + 1
    assert await pool.fetchval("SELECT count(*) FROM email_outbox WHERE event_id = $1", event.eventId) == 0

    await upsert_all(notifier_dsn, [Contact(customer, "late@example.com", "Late")])  # the operator's fix
    monkeypatch.setenv("NOTIFIER_DATABASE_URL", notifier_dsn)
    assert await asyncio.to_thread(customers.main, ["missing"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if str(event.bookingId) in line)
    assert f"customer {customer}" in line and "directory now: late@example.com" in line
