"""Periodic job: the Redis-vs-Postgres reconciliation of flash vouchers. The
reservation expiry is in service_layer/expiry.py."""

from __future__ import annotations

import asyncio
import logging
import time

from prometheus_client import Gauge
from ticketing.logs import log_action
from ticketing.metrics import forget

from voucher_service.domain.errors import GateRecovering, PaymentsUnavailable
from voucher_service.domain.gate import GateOrder
from voucher_service.domain.model import may_expire
from voucher_service.service_layer import flash
from voucher_service.service_layer.expiry import payment_statuses
from voucher_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)
DRIFT = Gauge("ticketing_voucher_gate_drift", "Redis remaining minus what Postgres says it should be", ["code"])
RELOAD_WAIT_SECONDS = 15  # how long one reconcile run waits for the writer after a Redis loss
GRACE_SECONDS = 60  # a Redis-only reservation (sent or pending) younger than TTL + grace may still land


_DRIFTING: set[str] = set()  # the codes DRIFT has a series for in this process


async def reconcile_all(deps: Deps) -> dict[str, int]:
    """Every flash voucher still selling; the drift series of those that ended (or stopped being flash) go."""
    async with deps.uow() as uow:
        codes = await uow.vouchers.flash_codes()
    for ended in _DRIFTING.difference(codes):
        forget(ended, DRIFT)
    _DRIFTING.intersection_update(codes)
    return {code: await reconcile(code, deps) for code in codes}


async def reconcile(code: str, deps: Deps) -> int:
    """Report drift = Redis remaining - (total_limit - used_count - Redis-only live uses), then repair
    what is provably safe to repair. Returns the drift measured before repairs."""
    gate = deps.gate
    remaining = await gate.remaining(code)
    if remaining is None:  # Redis lost the voucher: reload it once Postgres caught up
        await _reload(code, deps)
        return 0
    deps.recoveries.pop(code, None)
    held = [o for o in await gate.orders(code) if o.held]
    async with deps.uow() as uow:
        voucher = await uow.vouchers.get(code)
        live = await uow.vouchers.live_redemptions(code)
        known = await uow.vouchers.known_orders([o.order_id for o in held])
    assert voucher is not None
    redis_only = [o for o in held if o.order_id not in known]
    drift = remaining - (voucher.total_limit - voucher.used_count - len(redis_only))
    DRIFT.labels(code).set(drift)
    _DRIFTING.add(code)
    if drift:
        log_action(logger, "voucher.reconcile_drift", f"gate and database disagree on {code}",
                   level=logging.ERROR, code=code, drift=drift, redis_remaining=remaining,
                   used_count=voucher.used_count, redis_only=len(redis_only))
    await _repair(code, deps, held, known, redis_only, live, over_counted=drift > 0)
    return drift


async def _reload(code: str, deps: Deps) -> None:
    """Wait (bounded) for the writer to catch up, then warm the gate; the next run tries again."""
    deadline = time.monotonic() + deps.recovery_fence_seconds + RELOAD_WAIT_SECONDS
    while True:
        try:
            await flash.warm_up(code, deps)
            return
        except GateRecovering as exc:
            if time.monotonic() > deadline:
                log_action(logger, "voucher.gate_recovering", str(exc), level=logging.WARNING, code=code)
                return
        await asyncio.sleep(0.3)


async def _repair(code: str, deps: Deps, held: list[GateOrder], known: dict[str, str],
                  redis_only: list[GateOrder], live: list[tuple[str, int]], *, over_counted: bool) -> None:
    gate = deps.gate
    for order in held:  # pending in Redis but written: the send landed after all (or mark_sent failed)
        if order.pending and known.get(order.order_id) in ("RESERVED", "CONFIRMED"):
            await gate.mark_sent(code, order.order_id)
    # Released in Postgres, still held in Redis (a give-back that failed): give it back now.
    for order in held:
        if known.get(order.order_id) == "RELEASED":
            await gate.release(code, order.order_id)
    # Held only in Redis for longer than any in-flight message could take: the send never landed (the use is
    # free: give it back) or the message was refused into the DLQ after a Redis data loss (the gate
    # over-counted, drift > 0: retire the entry WITHOUT giving back, else the gate would offer uses Postgres
    # no longer has). Only once the order's payment ended unpaid or never existed, as for the expiry: a paid
    # use is never given away, whatever the lag. Tombstone first, so a late message can never count.
    cutoff = time.time() - deps.reservation_ttl_seconds - GRACE_SECONDS
    for order in await _unpaid(code, [o for o in redis_only if 0 < o.reserved_at < cutoff], deps):
        async with deps.uow() as uow:
            if await uow.vouchers.insert_tombstone(code, order.customer_id, order.order_id, order.order_amount):
                await uow.commit()
                await gate.release(code, order.order_id, retire=over_counted)
    # Live in Postgres but unknown to Redis (e.g. written before a Redis loss): count it in the gate.
    held_ids = {o.order_id for o in await gate.orders(code)}
    missing = [pair for pair in live if pair[0] not in held_ids]
    if missing:
        await gate.record(code, "adopt", 0, missing)


async def _unpaid(code: str, orders: list[GateOrder], deps: Deps) -> list[GateOrder]:
    """The orders whose payment may let their use go (model.may_expire); none if payment-service cannot tell."""
    if not orders:
        return []
    try:
        statuses = await payment_statuses(deps, [o.order_id for o in orders])
    except PaymentsUnavailable as exc:
        log_action(logger, "voucher.reconcile_payments_unavailable", f"nothing given back this run: {exc}",
                   level=logging.WARNING, code=code, orders=len(orders))
        return []
    return [o for o in orders if may_expire(statuses[o.order_id])]
