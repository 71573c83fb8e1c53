"""Loading the flash gate from Postgres (never from total_limit alone).

remaining = total_limit - live uses in Postgres - uses only Redis knows (orders hash entries held, P or
R, that Postgres has not written yet). The adopt script sets `remaining` only if it is missing, so
concurrent warm-ups (many API workers answering NOT_LOADED at once) are safe: one wins.

After Redis lost a voucher's keys, Postgres lags the lost gate (Forma B: VoucherReserved messages are
still in flight), so a reload right away would count their uses as free and promise them again (a 201
later refused by ck_used). The gate therefore stays shut (503 GateRecovering: undersell, never a false
201) until
1. the fence has passed (every send the old gate admitted has been acknowledged or has failed: a send
   is awaited at most `kafka_send_timeout_seconds`, the fence's default), and
2. the voucher-reserved writer has committed up to the partition's end offset read after the fence.
Only a voucher created this very moment (no message can exist yet) is loaded at once (`fresh`).
"""

from __future__ import annotations

import logging
import time

from ticketing.logs import log_action

from voucher_service.domain.errors import GateRecovering, VoucherNotFound
from voucher_service.service_layer.ports import Deps
from voucher_service.service_layer.process_state import Recovery

logger = logging.getLogger(__name__)
CHUNK = 2000  # pairs per script call: keeps each Lua run short (Redis is single-threaded)
EXPIRE_AFTER_END_SECONDS = 86400  # the gate's keys outlive the voucher by a day (late releases)
POLL_SECONDS = 0.25  # at most one Kafka offsets look-up per voucher and process this often
# A recovery nobody asked about for this long starts over (fence and mark again): another process may
# have reloaded the gate meanwhile, and a later loss must never reuse an old fence and mark.
STALE_SECONDS = 3.0


async def writer_caught_up(code: str, deps: Deps) -> bool:
    lag = deps.writer_lag
    if lag is None:  # no way to know what is in flight: stay shut (undersell) rather than guess
        return False
    now = time.monotonic()
    rec: Recovery | None = deps.recoveries.get(code)
    if rec is None or now - rec.seen > STALE_SECONDS:
        rec = deps.recoveries[code] = Recovery(now)
    rec.seen = now
    if now < rec.detected + deps.recovery_fence_seconds or now < rec.checked + POLL_SECONDS:
        return False
    rec.checked = now
    try:
        if rec.mark is None:
            rec.mark = await lag.end_offset(code)
        committed = await lag.committed_offset(code)
    except Exception as exc:  # Kafka down: cannot prove anything, keep the gate shut
        log_action(logger, "voucher.gate_recovery_probe_failed", str(exc), level=logging.WARNING, code=code)
        return False
    log_action(logger, "voucher.gate_recovery_progress", code=code, end_offset=rec.mark, committed=committed)
    return bool(committed >= rec.mark)


async def warm_up(code: str, deps: Deps, *, fresh: bool = False) -> bool:
    """True if this call loaded the gate, False if it was loaded already. Raises GateRecovering while
    the writer has not caught up with the messages the lost gate admitted (unless `fresh`)."""
    if not fresh and not await writer_caught_up(code, deps):
        rec = deps.recoveries.get(code)
        waited = time.monotonic() - rec.detected if rec else 0.0
        raise GateRecovering(f"voucher {code}: the flash-sale gate lost its data and reopens once every "
                             f"reservation in flight has reached the database (waiting {waited:.1f} s)")
    gate = deps.gate
    gate_live = [o for o in await gate.orders(code) if o.held]
    async with deps.uow() as uow:
        voucher = await uow.vouchers.get(code)
        if voucher is None:
            raise VoucherNotFound(f"voucher {code} not found")
        live = await uow.vouchers.live_redemptions(code)
        known = await uow.vouchers.known_orders([o.order_id for o in gate_live])
    redis_only = sum(1 for o in gate_live if o.order_id not in known)
    remaining = max(0, voucher.total_limit - len(live) - redis_only)
    expire_at = int(voucher.ends_at.timestamp()) + EXPIRE_AFTER_END_SECONDS
    loaded = await gate.record(code, "warm", remaining, live[:CHUNK], expire_at) >= 0
    deps.recoveries.pop(code, None)
    if not loaded:
        return False
    for start in range(CHUNK, len(live), CHUNK):
        await gate.record(code, "more", 0, live[start:start + CHUNK])
    log_action(logger, "voucher.gate_warmed", code=code, remaining=remaining, live_in_postgres=len(live),
               redis_only=redis_only, fresh=fresh)
    return True


async def warm_selling_vouchers(deps: Deps) -> None:
    """At worker start: load every selling flash voucher the gate does not hold yet (SET NX semantics).
    A voucher whose gate Redis lost stays shut until the writer caught up: the reconciliation retries."""
    try:
        async with deps.uow() as uow:
            codes = await uow.vouchers.flash_codes()
    except Exception as exc:  # a warm-up failure must not stop the worker
        log_action(logger, "voucher.startup_warmup_failed", str(exc), level=logging.WARNING)
        return
    for code in codes:
        try:
            if await deps.gate.remaining(code) is None:
                await warm_up(code, deps)
        except Exception as exc:  # one voucher (recovering, Redis down) must not stop the others
            log_action(logger, "voucher.startup_warmup_failed", str(exc), level=logging.WARNING, code=code)
