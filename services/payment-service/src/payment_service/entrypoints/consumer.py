"""The booking-events consumer: BookingFailed -> refund, SeatsReleased -> cancel the gateway session."""

from __future__ import annotations

from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import BOOKING_EVENTS, decode_booking_event

from payment_service.bootstrap import Container
from payment_service.service_layer.reactions import cancel_released_hold, refund_failed_booking
from payment_service.service_layer.unit_of_work import joined


def booking_events_consumer(container: Container) -> IdempotentConsumer:
    gateway = container.gateway

    async def on_booking_failed(conn: asyncpg.Connection, event: Any) -> None:
        await refund_failed_booking(event, joined(conn), gateway)

    async def on_seats_released(conn: asyncpg.Connection, event: Any) -> None:
        await cancel_released_hold(event, joined(conn), gateway)

    settings = container.settings
    config = ConsumerConfig(
        name=f"{settings.kafka_group_prefix}payment-service.booking-events",
        topics=[BOOKING_EVENTS], bootstrap=settings.kafka_bootstrap_servers, decode=decode_booking_event,
        handlers={"BookingFailed": on_booking_failed, "SeatsReleased": on_seats_released})
    return IdempotentConsumer(config, container.pool)
