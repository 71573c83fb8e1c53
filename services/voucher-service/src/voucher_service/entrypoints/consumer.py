"""Kafka consumers: voucher-reserved (flash mode writes Postgres) and booking-events (confirm/release)."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer, PoisonMessage
from ticketing.events import (
    BOOKING_EVENTS,
    VOUCHER_RESERVED,
    VoucherReserved,
    decode_booking_event,
    decode_voucher_reserved,
)
from ticketing.logs import log_action

from voucher_service.config import VoucherSettings
from voucher_service.domain import commands
from voucher_service.domain.errors import OutOfStock, RedemptionConflict, VoucherError
from voucher_service.service_layer import flash, handlers
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.unit_of_work import JoinedUnitOfWork

logger = logging.getLogger(__name__)


def voucher_reserved_handler(ctx: Context) -> Any:
    known: set[str] = set()  # voucher codes are never deleted: one look-up per code and process

    async def apply(conn: asyncpg.Connection, event: VoucherReserved) -> None:
        await apply_voucher_reserved(conn, event, ctx, known)
    return apply


async def apply_voucher_reserved(conn: asyncpg.Connection, event: VoucherReserved, ctx: Context,
                                 known: set[str] | None = None) -> None:
    """Write a flash reservation: INSERT ... ON CONFLICT (order_id) DO NOTHING, used_count + 1 only when
    the row was inserted, so a redelivered message changes nothing. ck_used refusing the increment
    (the gate let through more than the limit, e.g. after a Redis data loss) is a poison message: it
    goes to voucher-reserved.DLQ and the database never oversells. A booking outcome parked before
    this message landed is applied now (CONFIRMED, or RELEASED: a tombstone and the use given back)."""
    repo = JoinedUnitOfWork(conn).vouchers
    if (known is None or event.code not in known) and await repo.get(event.code) is None:
        log_action(logger, "voucher.reserved_skipped", "unknown voucher (another environment's)",
                   code=event.code, order_id=event.orderId)
        return
    if known is not None:
        known.add(event.code)
    outcome = await repo.take_outcome(event.orderId)
    status = "RELEASED" if outcome == "RELEASED" else "CONFIRMED" if outcome else "RESERVED"
    try:
        if status == "RELEASED":
            if await repo.insert_tombstone(event.code, event.customerId, event.orderId, event.orderAmount):
                await flash.give_back(event.code, event.orderId, ctx)
            return
        if await repo.insert_redemption(event.code, event.customerId, event.orderId, event.orderAmount,
                                        status):
            await repo.count_use(event.code)
            return
    except OutOfStock as exc:
        raise PoisonMessage(f"oversell refused by ck_used: {exc}") from exc
    except RedemptionConflict as exc:
        raise PoisonMessage(f"per-customer limit refused by the slot index: {exc}") from exc
    if await repo.redemption(event.orderId) is None:  # not a duplicate: every slot was taken
        raise PoisonMessage(f"customer {event.customerId} has no free slot on voucher {event.code}")


def booking_handlers(ctx: Context) -> dict[str, Any]:
    async def confirm(conn: asyncpg.Connection, event: Any) -> None:
        await _apply(ctx, conn, event, handlers.confirm_reservation, commands.ConfirmReservation, "CONFIRMED")

    async def release(conn: asyncpg.Connection, event: Any) -> None:
        await _apply(ctx, conn, event, handlers.release_reservation, commands.ReleaseReservation, "RELEASED")

    return {"BookingConfirmed": confirm, "BookingFailed": release, "SeatsReleased": release,
            "PaymentFailed": release}


async def _apply(ctx: Context, conn: asyncpg.Connection, event: Any, handler: Any, command: Any,
                 outcome: str) -> None:
    order_id = str(event.bookingId)  # the voucher orderId is the bookingId
    try:
        applied = await handler(command(order_id), ctx.joined(JoinedUnitOfWork(conn)))
    except VoucherError as exc:  # e.g. release of a confirmed use: nothing to do, say why
        applied = False
        log_action(logger, "voucher.booking_event_ignored", str(exc), event_type=event.type,
                   order_id=order_id)
        return
    if not applied:  # no redemption (yet): park the outcome for a flash reservation still in flight
        await JoinedUnitOfWork(conn).vouchers.park_outcome(order_id, outcome)
        log_action(logger, "voucher.booking_outcome_parked", event_type=event.type, order_id=order_id)


def voucher_reserved_consumer(settings: VoucherSettings, pool: asyncpg.Pool,
                              ctx: Context) -> IdempotentConsumer:
    # One transaction per partition batch: a flash sale sends thousands of VoucherReserved a second, and one
    # WAL flush per message made Postgres lag the gate by tens of seconds (see ticketing.consumer).
    return IdempotentConsumer(ConsumerConfig(
        name=settings.writer_group, topics=[VOUCHER_RESERVED],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_voucher_reserved,
        handlers={"VoucherReserved": voucher_reserved_handler(ctx)}, batch_transactions=True), pool)


def booking_events_consumer(settings: VoucherSettings, pool: asyncpg.Pool,
                            ctx: Context) -> IdempotentConsumer:
    return IdempotentConsumer(ConsumerConfig(
        name=f"{settings.kafka_group_prefix}voucher-service", topics=[BOOKING_EVENTS],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_booking_event,
        handlers=booking_handlers(ctx)), pool)
