"""The booking-events consumer: BookingFailed -> refund due, BookingConfirmed -> booked, BookingCancelled ->
refund due, SeatsReleased -> end the hold's open payment. Each runs in the consumer's transaction, beside its
inbox row."""

from __future__ import annotations

from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import BOOKING_EVENTS, decode_booking_event

from payment_service.domain.commands import (
    EndPaymentOfReleasedHold,
    RecordBooking,
    RefundCancelledBooking,
    RefundFailedBooking,
)
from payment_service.service_layer import reactions
from payment_service.service_layer.ports import Deps


def booking_events_consumer(deps: Deps, pool: asyncpg.Pool) -> IdempotentConsumer:
    async def on_booking_failed(conn: asyncpg.Connection, event: Any) -> None:
        cmd = RefundFailedBooking(event.data.paymentId, event.data.reason)
        await reactions.refund_failed_booking(cmd, deps.uow().joined(conn))

    async def on_booking_confirmed(conn: asyncpg.Connection, event: Any) -> None:
        await reactions.record_booking(RecordBooking(event.data.paymentId), deps.uow().joined(conn))

    async def on_booking_cancelled(conn: asyncpg.Connection, event: Any) -> None:
        cmd = RefundCancelledBooking(event.data.paymentId, event.data.reason)
        await reactions.refund_cancelled_booking(cmd, deps.uow().joined(conn))

    async def on_seats_released(conn: asyncpg.Connection, event: Any) -> None:
        await reactions.end_payment_of_released_hold(EndPaymentOfReleasedHold(event.data.holdId),
                                                     deps.uow().joined(conn), deps.gateway)

    settings = deps.settings
    config = ConsumerConfig(
        name=f"{settings.kafka_group_prefix}payment-service.booking-events",
        topics=[BOOKING_EVENTS], bootstrap=settings.kafka_bootstrap_servers, decode=decode_booking_event,
        handlers={"BookingFailed": on_booking_failed, "BookingConfirmed": on_booking_confirmed,
                  "BookingCancelled": on_booking_cancelled, "SeatsReleased": on_seats_released})
    return IdempotentConsumer(config, pool)
