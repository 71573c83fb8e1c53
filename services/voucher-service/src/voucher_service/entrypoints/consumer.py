"""Kafka consumers: voucher-reserved (flash mode writes Postgres) and booking-events (confirm/release)."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import (
    BOOKING_EVENTS,
    VOUCHER_RESERVED,
    decode_booking_event,
    decode_voucher_reserved,
)
from ticketing.logs import log_action

from voucher_service.config import VoucherSettings
from voucher_service.domain import commands
from voucher_service.domain.errors import VoucherError
from voucher_service.entrypoints.reserved_writer import (
    voucher_reserved_batch_handler,
    voucher_reserved_handler,
)
from voucher_service.service_layer import handlers, outcomes
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.unit_of_work import JoinedUnitOfWork

logger = logging.getLogger(__name__)


def booking_handlers(ctx: Context) -> dict[str, Any]:
    """booking-events -> the use of the payment they name (orderId = paymentId; service_layer/outcomes.py).

    SeatsReleased is deliberately not consumed: it names no payment, and payment-service answers every
    SeatsReleased by ending the hold's open payment attempt, which always produces PaymentFailed{EXPIRED}
    or, if the customer paid at that very moment, PaymentSucceeded -> BookingFailed; both release the use here.
    """
    async def confirm(conn: asyncpg.Connection, event: Any) -> None:
        await _apply(ctx, conn, event, handlers.confirm_reservation, commands.ConfirmReservation, "CONFIRMED")

    async def release(conn: asyncpg.Connection, event: Any) -> None:
        await _apply(ctx, conn, event, handlers.release_reservation, commands.ReleaseReservation, "RELEASED")

    return {"BookingConfirmed": confirm, "BookingFailed": release, "PaymentFailed": release}


async def _apply(ctx: Context, conn: asyncpg.Connection, event: Any, handler: Any, command: Any,
                 outcome: str) -> None:
    order_id = str(event.data.paymentId)  # the voucher orderId is the paymentId
    uow = JoinedUnitOfWork(conn)
    try:
        applied = await handler(command(order_id), ctx.joined(uow))
    except VoucherError as exc:  # a stale event (release of a confirmed use...): logged, nothing changes
        log_action(logger, "voucher.booking_event_ignored", str(exc), event_type=event.type,
                   order_id=order_id, booking_id=str(event.bookingId))
        return
    if not applied:  # no redemption (yet): park the outcome for a flash reservation still in flight
        await outcomes.park(uow, order_id, outcome)


def voucher_reserved_consumer(settings: VoucherSettings, pool: asyncpg.Pool,
                              ctx: Context) -> IdempotentConsumer:
    # One transaction per partition batch: a flash sale sends thousands of VoucherReserved a second, and one
    # WAL flush per message made Postgres lag the gate by tens of seconds (see ticketing.consumer). The
    # batch handler writes it in a handful of statements: round trips per message burnt the CPU the API
    # needs; the per-event handler is the replay path that isolates a poison message.
    return IdempotentConsumer(ConsumerConfig(
        name=settings.writer_group, topics=[VOUCHER_RESERVED],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_voucher_reserved,
        handlers={"VoucherReserved": voucher_reserved_handler(ctx)},
        batch_handlers={"VoucherReserved": voucher_reserved_batch_handler(ctx)}, batch_transactions=True), pool)


def booking_events_consumer(settings: VoucherSettings, pool: asyncpg.Pool,
                            ctx: Context) -> IdempotentConsumer:
    return IdempotentConsumer(ConsumerConfig(
        name=f"{settings.kafka_group_prefix}voucher-service", topics=[BOOKING_EVENTS],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_booking_event,
        handlers=booking_handlers(ctx)), pool)
