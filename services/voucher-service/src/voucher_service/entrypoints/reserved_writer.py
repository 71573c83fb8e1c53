"""The voucher-reserved writer (flash mode): VoucherReserved -> the redemption row and used_count.

The shared consumer applies a partition batch in one transaction and hands the new events to
`apply_voucher_reserved_batch`, which writes the common case (per_user_limit = 1, no parked booking
outcome, one message per order and per customer and voucher) with ONE statement, and the rest one by
one through `apply_voucher_reserved`, in the same transaction. Any error fails the batch: the consumer
rolls it back and replays it record by record through `apply_voucher_reserved`, so exactly the culprit
(an oversell refused by ck_used, a customer with no free slot) goes to voucher-reserved.DLQ.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import asyncpg
from ticketing.consumer import PoisonMessage
from ticketing.events import VoucherReserved
from ticketing.logs import log_action

from voucher_service.domain.errors import OutOfStock, RedemptionConflict
from voucher_service.service_layer import flash
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.unit_of_work import JoinedUnitOfWork

logger = logging.getLogger(__name__)


def voucher_reserved_handler(ctx: Context) -> Any:
    known: set[str] = set()  # voucher codes are never deleted: one look-up per code and process

    async def apply(conn: asyncpg.Connection, event: VoucherReserved) -> None:
        await apply_voucher_reserved(conn, event, ctx, known)
    return apply


def voucher_reserved_batch_handler(ctx: Context) -> Any:
    known: set[str] = set()

    async def apply_batch(conn: asyncpg.Connection, events: list[VoucherReserved]) -> None:
        await apply_voucher_reserved_batch(conn, events, ctx, known)
    return apply_batch


async def apply_voucher_reserved_batch(conn: asyncpg.Connection, events: list[VoucherReserved], ctx: Context,
                                       known: set[str] | None = None) -> None:
    """`apply_voucher_reserved` for each event in order, with the common case set-based."""
    simple, one_by_one = _split(events)
    rows = [(e.code, e.customerId, e.orderId, e.orderAmount) for e in simple]
    for event, result in zip(simple, await JoinedUnitOfWork(conn).vouchers.write_reservations(rows),
                             strict=True):
        if result == "unknown":
            _log_unknown(event)
        elif result == "unseen":  # a concurrent writer took the order: the replay sees its row
            raise RedemptionConflict(f"order {event.orderId} was written concurrently")
        elif result == "fallback":
            one_by_one.append(event)
    position = {id(e): n for n, e in enumerate(events)}
    for event in sorted(one_by_one, key=lambda e: position[id(e)]):
        await apply_voucher_reserved(conn, event, ctx, known)


def _split(events: list[VoucherReserved]) -> tuple[list[VoucherReserved], list[VoucherReserved]]:
    """Messages that share an order or a (voucher, customer) in this batch depend on each other's
    effects (which one takes the slot): those go one by one, in order; the others in one statement."""
    pairs = Counter((e.code, e.customerId) for e in events)
    orders = Counter(e.orderId for e in events)
    alone = [pairs[e.code, e.customerId] == 1 and orders[e.orderId] == 1 for e in events]
    return ([e for e, a in zip(events, alone, strict=True) if a],
            [e for e, a in zip(events, alone, strict=True) if not a])


def _log_unknown(event: VoucherReserved) -> None:
    log_action(logger, "voucher.reserved_skipped", "unknown voucher (another environment's)",
               code=event.code, order_id=event.orderId)


async def apply_voucher_reserved(conn: asyncpg.Connection, event: VoucherReserved, ctx: Context,
                                 known: set[str] | None = None) -> None:
    """Write a flash reservation: INSERT ... ON CONFLICT (order_id) DO NOTHING, used_count + 1 only when
    the row was inserted, so a redelivered message changes nothing. ck_used refusing the increment
    (the gate let through more than the limit, e.g. after a Redis data loss) is a poison message: it
    goes to voucher-reserved.DLQ and the database never oversells. A booking outcome parked before
    this message landed is applied now (CONFIRMED, or RELEASED: a tombstone and the use given back)."""
    repo = JoinedUnitOfWork(conn).vouchers
    if (known is None or event.code not in known) and await repo.get(event.code) is None:
        _log_unknown(event)
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
