"""The voucher-reserved writer (flash mode): VoucherReserved -> the redemption row and used_count.

Runs inside the consumer's transaction (`deps.uow` joined to it). A partition batch comes to
`write_reserved_batch`, which writes the common case (per_user_limit = 1, no parked booking outcome, one
message per order and per customer and voucher) with ONE statement, and the rest one by one through
`write_reserved`, in the same transaction. Any error fails the batch: the consumer rolls it back and
replays it record by record through `write_reserved`, whose refusals (OutOfStock from ck_used,
RedemptionConflict or AlreadyUsed from the slot index) the entrypoint sends to voucher-reserved.DLQ:
exactly the culprit, and the database never oversells.
"""

from __future__ import annotations

import logging
from collections import Counter

from ticketing.events import VoucherReserved
from ticketing.logs import log_action

from voucher_service.domain.errors import AlreadyUsed, RedemptionConflict
from voucher_service.service_layer import flash, outcomes
from voucher_service.service_layer.ports import Deps, VoucherRepository

logger = logging.getLogger(__name__)


async def write_reserved_batch(events: list[VoucherReserved], deps: Deps) -> None:
    """`write_reserved` for each event in order, with the common case set-based."""
    simple, one_by_one = _split(events)
    rows = [(e.code, e.customerId, e.orderId, e.orderAmount) for e in simple]
    await outcomes.take_turn(deps, [e.orderId for e in events])
    async with deps.uow() as uow:
        results = await uow.vouchers.write_reservations(rows)
        await uow.commit()
    unknown: Counter[str] = Counter()
    for event, result in zip(simple, results, strict=True):
        if result == "unknown":
            unknown[event.code] += 1
        elif result == "unseen":  # a concurrent writer took the order: the replay sees its row
            raise RedemptionConflict(f"order {event.orderId} was written concurrently")
        elif result == "fallback":
            one_by_one.append(event)
    _log_unknown_in_batch(unknown)
    position = {id(e): n for n, e in enumerate(events)}
    for event in sorted(one_by_one, key=lambda e: position[id(e)]):
        await write_reserved(event, deps)


def _split(events: list[VoucherReserved]) -> tuple[list[VoucherReserved], list[VoucherReserved]]:
    """Messages that share an order or a (voucher, customer) in this batch depend on each other's
    effects (which one takes the slot): those go one by one, in order; the others in one statement."""
    pairs = Counter((e.code, e.customerId) for e in events)
    orders = Counter(e.orderId for e in events)
    alone = [pairs[e.code, e.customerId] == 1 and orders[e.orderId] == 1 for e in events]
    return ([e for e, a in zip(events, alone, strict=True) if a],
            [e for e, a in zip(events, alone, strict=True) if not a])


def _log_unknown_in_batch(unknown: Counter[str]) -> None:
    """One line per voucher of another environment in a batch, with its count: a shared topic can carry
    hundreds of thousands of them, and a line each made the writer's catching up slow."""
    for code, count in unknown.items():
        log_action(logger, "voucher.reserved_skipped", "unknown voucher (another environment's)", code=code,
                   count=count)


def _log_unknown(event: VoucherReserved) -> None:
    log_action(logger, "voucher.reserved_skipped", "unknown voucher (another environment's)",
               code=event.code, order_id=event.orderId)


async def write_reserved(event: VoucherReserved, deps: Deps) -> None:
    """Write a flash reservation: INSERT ... ON CONFLICT (order_id) DO NOTHING, used_count + 1 only when
    the row was inserted, so a redelivered message changes nothing. A booking outcome parked before this
    message landed is applied now (CONFIRMED, or RELEASED or CANCELLED: a tombstone and the use given back). Raises
    OutOfStock when ck_used refuses the use (the gate let through more than the limit, e.g. after a Redis
    data loss), RedemptionConflict or AlreadyUsed when the customer has no free slot."""
    await outcomes.take_turn(deps, [event.orderId])
    async with deps.uow() as uow:
        if not await _known(event.code, uow.vouchers, deps):
            _log_unknown(event)
            return
        gave_back = await _write(event, uow.vouchers)
        await uow.commit()
    if gave_back:
        await flash.give_back(event.code, event.orderId, deps)


async def _known(code: str, vouchers: VoucherRepository, deps: Deps) -> bool:
    if code not in deps.known_codes:
        if await vouchers.get(code) is None:
            return False
        deps.known_codes.add(code)
    return True


async def _write(event: VoucherReserved, vouchers: VoucherRepository) -> bool:
    """Write the use as its parked outcome says; True when a released use must go back to the gate."""
    outcome = await vouchers.take_outcome(event.orderId)
    if outcome in ("RELEASED", "CANCELLED"):
        return await vouchers.insert_tombstone(event.code, event.customerId, event.orderId, event.orderAmount,
                                               cancelled=outcome == "CANCELLED")
    status = "CONFIRMED" if outcome else "RESERVED"
    if await vouchers.insert_redemption(event.code, event.customerId, event.orderId, event.orderAmount, status):
        await vouchers.count_use(event.code)  # OutOfStock when ck_used refuses
    elif await vouchers.redemption(event.orderId) is None:  # not a duplicate: every slot was taken
        raise AlreadyUsed(f"customer {event.customerId} has no free slot on voucher {event.code}")
    return False
