"""Flash-sale mode: the Redis Lua gate decides, VoucherReserved goes
straight to Kafka, and the voucher-reserved consumer writes Postgres.

Where things can diverge, and why money is safe:
- a send whose outcome is unknown keeps the use held (pending) and answers 503; only a send that surely
  never left gives it back at once (flash_send.py: the pending rule, retries, the reconciliation's part).
- release/confirm before the consumer wrote the row -> handled from the gate's orders hash: confirm
  inserts the row itself (the late message then hits ON CONFLICT (order_id)); release writes a
  RELEASED tombstone row owning the order id, so the late message can never resurrect the use.
"""

from __future__ import annotations

import asyncio
import logging

from ticketing.logs import log_action

from voucher_service.domain import commands
from voucher_service.domain.errors import AlreadyUsed, GateUnavailable, OutOfStock, RedemptionConflict
from voucher_service.domain.gate import GateResult
from voucher_service.domain.model import Reservation, Voucher
from voucher_service.service_layer.flash_send import send
from voucher_service.service_layer.ports import Deps
from voucher_service.service_layer.warmup import warm_up

logger = logging.getLogger(__name__)
__all__ = ["confirm_unwritten", "give_back", "release_unwritten", "reserve", "warm_up"]


async def reserve(cmd: commands.ReserveVoucher, voucher: Voucher, deps: Deps) -> Reservation:
    gate = deps.gate
    # Late arrivals stop here, before the reserve script; a retry of an order the gate holds goes on (its
    # 503 asked for that retry, and it must be answered 201 once acknowledged, never OUT_OF_STOCK).
    if gate.sold_out(cmd.code) and not await gate.holds(cmd.code, cmd.order_id, cmd.customer_id):
        raise OutOfStock(f"voucher {cmd.code} is sold out")
    if deps.publisher is None or not deps.publisher.ready:  # before the gate: nothing to undo
        raise GateUnavailable("flash-sale reservations are unavailable: Kafka is not connected")
    args = (cmd.code, cmd.customer_id, voucher.per_user_limit, cmd.order_id, cmd.order_amount)
    result = await gate.reserve(*args)
    if result is GateResult.NOT_LOADED:  # before the sale, or Redis lost its data
        async with deps.warm_locks.setdefault(cmd.code, asyncio.Lock()):
            if await gate.remaining(cmd.code) is None:
                await warm_up(cmd.code, deps)  # GateRecovering (503) until Postgres caught up
        result = await gate.reserve(*args)
    if deps.recoveries and result is not GateResult.NOT_LOADED:
        deps.recoveries.pop(cmd.code, None)  # loaded (by another process): this recovery is over
    if result in (GateResult.RESERVED, GateResult.PENDING):  # PENDING: a retry, no send acknowledged yet
        await send(cmd, deps, reserved_now=result is GateResult.RESERVED)
    elif result is GateResult.OUT_OF_STOCK:
        gate.mark_sold_out(cmd.code)
        raise OutOfStock(f"voucher {cmd.code} has no uses left")
    elif result in (GateResult.ALREADY_USED, GateResult.ORDER_TAKEN):
        raise AlreadyUsed(f"customer {cmd.customer_id} or order {cmd.order_id} used voucher {cmd.code}")
    elif result is GateResult.NOT_LOADED:
        raise GateUnavailable(f"voucher {cmd.code} could not be loaded into the flash-sale gate")
    # DUPLICATE: a retry of a reservation the gate holds and Kafka has (read-your-writes, no Postgres).
    return Reservation(cmd.order_id, voucher.discount_amount)


async def give_back(code: str, order_id: str, deps: Deps) -> None:
    """After Postgres released a flash use: give it back to the gate too (idempotent script)."""
    try:
        await deps.gate.release(code, order_id)
    except GateUnavailable as exc:  # Postgres is right; the reconciliation repairs the gate later
        log_action(logger, "voucher.gate_release_failed", str(exc), level=logging.WARNING,
                   code=code, order_id=order_id)


async def confirm_unwritten(order_id: str, voucher: Voucher, deps: Deps) -> bool:
    """Confirm a use the gate holds but the consumer has not written yet: write it ourselves.
    Raises RedemptionConflict if the consumer wrote it meanwhile (the caller confirms that row)."""
    entry = await deps.gate.order(voucher.code, order_id)
    if entry is not None and entry.pending:  # nobody was told 201 for it yet
        raise GateUnavailable(f"reservation {order_id} is still being recorded; retry")
    if entry is None or entry.state != "R":
        return False
    async with deps.uow() as uow:
        if not await uow.vouchers.insert_redemption(voucher.code, entry.customer_id, order_id,
                                                    entry.order_amount, status="CONFIRMED"):
            raise RedemptionConflict(f"order {order_id} was written meanwhile")
        await uow.vouchers.count_use(voucher.code)  # OutOfStock if the database refuses
        await uow.commit()
    return True


async def release_unwritten(order_id: str, voucher: Voucher, deps: Deps) -> bool | None:
    """Release a use the gate holds but Postgres does not: tombstone first, then the gate.
    None: the consumer wrote the row meanwhile (release that row instead)."""
    entry = await deps.gate.order(voucher.code, order_id)
    if entry is None:
        return False
    # A pending entry (P, S) is released too: the tombstone owns the order id whether or not the send
    # lands, and a later forget or mark_sent finds X and changes nothing.
    if not entry.held:
        return True  # released already: idempotent
    async with deps.uow() as uow:
        if not await uow.vouchers.insert_tombstone(voucher.code, entry.customer_id, order_id,
                                                   entry.order_amount):
            return None
        await uow.commit()
    await give_back(voucher.code, order_id, deps)
    return True
