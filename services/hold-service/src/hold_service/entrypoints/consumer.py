"""PaymentSucceeded -> confirm the hold (or BookingFailed), exactly once via the shared inbox."""

from __future__ import annotations

from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import BOOKING_EVENTS, PaymentSucceeded, decode_booking_event

from hold_service.adapters.repository import PgHoldsUnitOfWork
from hold_service.config import HoldSettings
from hold_service.domain.commands import ConfirmBooking
from hold_service.service_layer.lifecycle import confirm_booking


async def on_payment_succeeded(conn: asyncpg.Connection, event: PaymentSucceeded) -> None:
    """Runs inside the consumer's transaction, beside its inbox row."""
    cmd = ConfirmBooking(event.bookingId, event.data.paymentId, event.data.amountCents)
    await confirm_booking(cmd, PgHoldsUnitOfWork(conn=conn))


def consumer_name(settings: HoldSettings) -> str:
    return f"{settings.kafka_group_prefix}hold-service.payments"


def payment_consumer(settings: HoldSettings, pool: asyncpg.Pool) -> IdempotentConsumer:
    handlers: dict[str, Any] = {"PaymentSucceeded": on_payment_succeeded}
    return IdempotentConsumer(ConsumerConfig(
        name=consumer_name(settings), topics=[BOOKING_EVENTS], bootstrap=settings.kafka_bootstrap_servers,
        decode=decode_booking_event, handlers=handlers), pool)
