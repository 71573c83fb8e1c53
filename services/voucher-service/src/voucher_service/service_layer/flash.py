"""Flash-sale mode (seed 002 section 8, "Forma B"): the Redis Lua gate decides, VoucherReserved goes
straight to Kafka, and the voucher-reserved consumer writes Postgres.

Where things can diverge, and why money is safe:
- send fails after the Lua reservation -> the use is forgotten in Redis and the client gets 503 (it may
  retry with the same order id). If the send actually landed (ambiguous timeout), Postgres gets a row
  Redis no longer counts; the reconciliation re-adopts it, and until then ck_used bounds Postgres.
- release/confirm before the consumer wrote the row -> handled from the gate's orders hash: confirm
  inserts the row itself (the late message then hits ON CONFLICT (order_id)); release writes a
  RELEASED tombstone row owning the order id, so the late message can never resurrect the use.
"""

from __future__ import annotations

import asyncio
import logging

from ticketing.events import VoucherReserved
from ticketing.logs import log_action

from voucher_service.domain import commands
from voucher_service.domain.errors import AlreadyUsed, GateUnavailable, OutOfStock, RedemptionConflict
from voucher_service.domain.model import GateResult, Reservation, Voucher
from voucher_service.service_layer.context import Context
from voucher_service.service_layer.warmup import warm_up

logger = logging.getLogger(__name__)
__all__ = ["confirm_unwritten", "give_back", "release_unwritten", "reserve", "warm_up"]
PENDING_POLLS, PENDING_POLL_SECONDS = 20, 0.05  # a retry waits up to 1 s for the first attempt's ack


async def reserve(cmd: commands.ReserveVoucher, voucher: Voucher, ctx: Context) -> Reservation:
    gate = ctx.flash_gate()
    if gate.sold_out(cmd.code):  # late arrivals stop here, before Redis
        raise OutOfStock(f"voucher {cmd.code} is sold out")
    if ctx.publisher is None or not ctx.publisher.ready:  # before the gate: nothing to undo
        raise GateUnavailable("flash-sale reservations are unavailable: Kafka is not connected")
    args = (cmd.code, cmd.customer_id, voucher.per_user_limit, cmd.order_id, cmd.order_amount)
    result = await gate.reserve(*args)
    if result is GateResult.NOT_LOADED:  # before the sale, or Redis lost its data
        async with ctx.warm_locks.setdefault(cmd.code, asyncio.Lock()):
            if await gate.remaining(cmd.code) is None:
                await warm_up(cmd.code, ctx)  # GateRecovering (503) until Postgres caught up
        result = await gate.reserve(*args)
    if ctx.recoveries and result is not GateResult.NOT_LOADED:
        ctx.recoveries.pop(cmd.code, None)  # loaded (by another process): this recovery is over
    if result is GateResult.RESERVED:
        await _publish(cmd, ctx)
    elif result is GateResult.PENDING:
        await _await_first_attempt(cmd, ctx)
    elif result is GateResult.OUT_OF_STOCK:
        gate.mark_sold_out(cmd.code)
        raise OutOfStock(f"voucher {cmd.code} has no uses left")
    elif result in (GateResult.ALREADY_USED, GateResult.ORDER_TAKEN):
        raise AlreadyUsed(f"customer {cmd.customer_id} or order {cmd.order_id} used voucher {cmd.code}")
    elif result is GateResult.NOT_LOADED:
        raise GateUnavailable(f"voucher {cmd.code} could not be loaded into the flash-sale gate")
    # DUPLICATE: a retry of a reservation the gate holds and Kafka has (read-your-writes, no Postgres).
    return Reservation(cmd.order_id, voucher.discount_amount)


async def _await_first_attempt(cmd: commands.ReserveVoucher, ctx: Context) -> None:
    """A retry while the first attempt's send is unacknowledged: 201 only once it is, since the send
    may still fail (and the use be forgotten). Waits briefly, then 503 (the client retries)."""
    for _ in range(PENDING_POLLS):
        await asyncio.sleep(PENDING_POLL_SECONDS)
        entry = await ctx.flash_gate().order(cmd.code, cmd.order_id)
        if entry is None:
            break  # the first attempt's send failed and was undone: a new attempt may reserve
        if entry.state == "R":
            return
        if entry.state == "X":
            raise AlreadyUsed(f"order {cmd.order_id} was released")
    raise GateUnavailable(f"order {cmd.order_id}: the first attempt is still being recorded; retry")


async def _publish(cmd: commands.ReserveVoucher, ctx: Context) -> None:
    assert ctx.publisher is not None
    event = VoucherReserved.new(code=cmd.code, customer_id=cmd.customer_id, order_id=cmd.order_id,
                                order_amount=cmd.order_amount)
    try:
        await ctx.publisher.publish(event)
    except Exception as exc:  # any failure: undo in Redis (forget, so a retry may reserve again)
        log_action(logger, "voucher.flash_publish_failed", str(exc), level=logging.WARNING,
                   code=cmd.code, order_id=cmd.order_id, error=type(exc).__name__)
        try:
            await ctx.flash_gate().release(cmd.code, cmd.order_id, forget=True)
        except GateUnavailable:
            pass  # the use stays reserved in Redis only: undersell, fixed by the reconciliation
        raise GateUnavailable("the reservation could not be recorded (Kafka); nothing was reserved") from exc
    try:
        await ctx.flash_gate().mark_sent(cmd.code, cmd.order_id)
    except GateUnavailable as exc:  # the use is real (Kafka has it): 201; reconciliation marks it later
        log_action(logger, "voucher.gate_mark_sent_failed", str(exc), level=logging.WARNING,
                   code=cmd.code, order_id=cmd.order_id)


async def give_back(code: str, order_id: str, ctx: Context) -> None:
    """After Postgres released a flash use: give it back to the gate too (idempotent script)."""
    try:
        await ctx.flash_gate().release(code, order_id)
    except GateUnavailable as exc:  # Postgres is right; the reconciliation repairs the gate later
        log_action(logger, "voucher.gate_release_failed", str(exc), level=logging.WARNING,
                   code=code, order_id=order_id)


async def confirm_unwritten(order_id: str, voucher: Voucher, ctx: Context) -> bool:
    """Confirm a use the gate holds but the consumer has not written yet: write it ourselves.
    Raises RedemptionConflict if the consumer wrote it meanwhile (the caller confirms that row)."""
    entry = await ctx.flash_gate().order(voucher.code, order_id)
    if entry is not None and entry.state == "P":  # the send may still fail and the use be forgotten
        raise GateUnavailable(f"reservation {order_id} is still being recorded; retry")
    if entry is None or entry.state != "R":
        return False
    async with ctx.uow() as uow:
        if not await uow.vouchers.insert_redemption(voucher.code, entry.customer_id, order_id,
                                                    entry.order_amount, status="CONFIRMED"):
            raise RedemptionConflict(f"order {order_id} was written meanwhile")
        await uow.vouchers.count_use(voucher.code)  # OutOfStock if the database refuses
        await uow.commit()
    return True


async def release_unwritten(order_id: str, voucher: Voucher, ctx: Context) -> bool | None:
    """Release a use the gate holds but Postgres does not: tombstone first, then the gate.
    None: the consumer wrote the row meanwhile (release that row instead)."""
    entry = await ctx.flash_gate().order(voucher.code, order_id)
    if entry is None:
        return False
    # P (send pending) is released too: the tombstone owns the order id whether or not the send lands,
    # and a later forget (failed send) or mark_sent finds X and changes nothing.
    if not entry.held:
        return True  # released already: idempotent
    async with ctx.uow() as uow:
        if not await uow.vouchers.insert_tombstone(voucher.code, entry.customer_id, order_id,
                                                   entry.order_amount):
            return None
        await uow.commit()
    await give_back(voucher.code, order_id, ctx)
    return True
