"""PaymentSucceeded -> confirm the hold (or BookingFailed), exactly once via the shared inbox; a hold that
ended unpaid (SeatsReleased: cancelled, or expired, swept or taken over) ends its customer's waiting-room slot."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import BOOKING_EVENTS, PaymentSucceeded, SeatsReleased, decode_booking_event

from hold_service.config import HoldSettings
from hold_service.domain.commands import ConfirmBooking
from hold_service.service_layer.lifecycle import confirm_booking
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.waiting_room import end_slot


def on_payment_succeeded(deps: Deps) -> Callable[[asyncpg.Connection, PaymentSucceeded], Awaitable[None]]:
    async def handle(conn: asyncpg.Connection, event: PaymentSucceeded) -> None:
        """Runs inside the consumer's transaction, beside its inbox row."""
        cmd = ConfirmBooking(event.bookingId, event.data.paymentId, event.data.amountCents)
        if await confirm_booking(cmd, deps.uow().joined(conn)) == "confirmed":
            # Paying ends the customer's waiting-room slot. Redis is told before the transaction commits:
            # should the commit fail, the slot ended early for a customer who paid, and nothing else.
            await end_slot(event.showtimeId, event.customerId, deps)
    return handle


def on_seats_released(deps: Deps) -> Callable[[asyncpg.Connection, SeatsReleased], Awaitable[None]]:
    async def handle(conn: asyncpg.Connection, event: SeatsReleased) -> None:
        """A hold ended unpaid: its customer's turn is over, as at any box office whose cart timer ran out, and
        his slot goes to the next in the queue now rather than when his token lapses (a customer who walked
        away would otherwise keep one of the few slots, and with few seats left stop admission, that long).
        A cancel ended it already (holds.py); ending it again changes nothing."""
        await end_slot(event.showtimeId, event.customerId, deps)
    return handle


def consumer_name(settings: HoldSettings) -> str:
    return f"{settings.kafka_group_prefix}hold-service.payments"


def payment_consumer(settings: HoldSettings, pool: asyncpg.Pool, deps: Deps) -> IdempotentConsumer:
    handlers: dict[str, Any] = {"PaymentSucceeded": on_payment_succeeded(deps),
                                "SeatsReleased": on_seats_released(deps)}
    return IdempotentConsumer(ConsumerConfig(
        name=consumer_name(settings), topics=[BOOKING_EVENTS], bootstrap=settings.kafka_bootstrap_servers,
        decode=decode_booking_event, handlers=handlers, batch_transactions=True), pool)
