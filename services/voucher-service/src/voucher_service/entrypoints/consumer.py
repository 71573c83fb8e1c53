"""Kafka consumers: voucher-reserved (flash mode writes Postgres) and booking-events (confirm/release).

Each handler runs in the idempotent consumer's transaction, beside its inbox row: the service layer gets
`Deps` whose unit of work is joined to it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
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
from ticketing.inbox import Handler
from ticketing.logs import log_action

from voucher_service.config import VoucherSettings
from voucher_service.domain import commands
from voucher_service.domain.errors import VoucherError
from voucher_service.service_layer import flash_writer, outcomes, reactions
from voucher_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)
# The writer's batches: during a flash sale the broker answers its fetch once about 70 VoucherReserved (~450
# bytes each) are there, or after 100 ms: one transaction per ~70 reservations instead of one per handful
# (docs/benchmarks.md, vouchers), for at most 100 ms more between the gate's 201 and the row in Postgres.
WRITER_FETCH_MIN_BYTES = 32 * 1024
WRITER_FETCH_MAX_WAIT_MS = 100


def joined(deps: Deps, conn: asyncpg.Connection) -> Deps:
    """The same deps (and per-process state), their unit of work inside the consumer's transaction."""
    uow = deps.uow().joined(conn)
    return replace(deps, uow=lambda: uow)


def booking_handlers(deps: Deps) -> dict[str, Handler]:
    """BookingConfirmed confirms the payment's use, PaymentFailed and BookingFailed release it, BookingCancelled
    gives it back even when confirmed (outcomes.py). SeatsReleased is deliberately not consumed: it names no
    payment, and payment-service answers every SeatsReleased by ending the hold's open payment attempt, which
    always produces PaymentFailed{EXPIRED} or, if the customer paid at that very moment, PaymentSucceeded ->
    BookingFailed; both release the use.
    """
    def settle(outcome: str) -> Handler:
        async def handle(conn: asyncpg.Connection, event: Any) -> None:
            order_id = str(event.data.paymentId)  # the voucher orderId is the paymentId
            try:
                await reactions.settle_use(commands.SettleUse(order_id, outcome), joined(deps, conn))
            except VoucherError as exc:  # a stale event (release of a confirmed use...): nothing changed
                log_action(logger, "voucher.booking_event_ignored", str(exc), event_type=event.type,
                           order_id=order_id, booking_id=str(event.bookingId))
        return handle

    async def cancel(conn: asyncpg.Connection, event: Any) -> None:
        await outcomes.cancel_use(commands.CancelUse(str(event.data.paymentId)), joined(deps, conn))

    return {"BookingConfirmed": settle("CONFIRMED"), "BookingFailed": settle("RELEASED"),
            "PaymentFailed": settle("RELEASED"), "BookingCancelled": cancel}


def voucher_reserved_consumer(settings: VoucherSettings, pool: asyncpg.Pool, deps: Deps) -> IdempotentConsumer:
    # One transaction per partition batch (the flash-mode figures: docs/benchmarks.md): the batch handler writes it
    # in a handful of statements; the per-event handler is the replay path that isolates a poison message.
    async def write(conn: asyncpg.Connection, event: VoucherReserved) -> None:
        try:
            await flash_writer.write_reserved(event, joined(deps, conn))
        except VoucherError as exc:  # the database refused the use (ck_used, the slot index): never retried
            raise PoisonMessage(f"{type(exc).__name__}: {exc}") from exc

    async def write_batch(conn: asyncpg.Connection, events: list[VoucherReserved]) -> None:
        await flash_writer.write_reserved_batch(events, joined(deps, conn))  # any error: replayed by `write`

    return IdempotentConsumer(ConsumerConfig(
        name=settings.writer_group, topics=[VOUCHER_RESERVED],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_voucher_reserved,
        handlers={"VoucherReserved": write}, batch_handlers={"VoucherReserved": write_batch},
        batch_transactions=True, fetch_min_bytes=WRITER_FETCH_MIN_BYTES, fetch_max_wait_ms=WRITER_FETCH_MAX_WAIT_MS),
        pool)


def booking_events_consumer(settings: VoucherSettings, pool: asyncpg.Pool, deps: Deps) -> IdempotentConsumer:
    return IdempotentConsumer(ConsumerConfig(
        name=f"{settings.kafka_group_prefix}voucher-service", topics=[BOOKING_EVENTS],
        bootstrap=settings.kafka_bootstrap_servers, decode=decode_booking_event,
        handlers=booking_handlers(deps), batch_transactions=True), pool)
