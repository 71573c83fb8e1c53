"""Loading the flash gate from Postgres (seed 002 section 9: never from total_limit alone).

remaining = total_limit - live uses in Postgres - uses only Redis knows (orders hash entries in
state R that Postgres has not written yet). The adopt script sets `remaining` only if it is missing,
so concurrent warm-ups (many API workers answering NOT_LOADED at once) are safe: one wins.

After FLUSHALL Redis knows nothing, so VoucherReserved messages still in flight are in neither count
and their uses look available: the gate may accept up to that many extra reservations. Oversell stays
0 because the consumer's `used_count + 1` then violates ck_used and the message goes to the DLQ
(a customer told 201 whose use was refused; undersell-safe, reported by the DLQ and the drift metric).
"""

from __future__ import annotations

import logging

from ticketing.logs import log_action

from voucher_service.domain.errors import VoucherNotFound
from voucher_service.service_layer.context import Context

logger = logging.getLogger(__name__)
CHUNK = 2000  # pairs per script call: keeps each Lua run short (Redis is single-threaded)


async def warm_up(code: str, ctx: Context) -> bool:
    """True if this call loaded the gate, False if it was loaded already."""
    gate = ctx.flash_gate()
    gate_live = [o for o in await gate.orders(code) if o.state == "R"]
    async with ctx.uow() as uow:
        voucher = await uow.vouchers.get(code)
        if voucher is None:
            raise VoucherNotFound(f"voucher {code} not found")
        live = await uow.vouchers.live_redemptions(code)
        known = await uow.vouchers.known_orders([o.order_id for o in gate_live])
    redis_only = sum(1 for o in gate_live if o.order_id not in known)
    remaining = max(0, voucher.total_limit - len(live) - redis_only)
    if await gate.record(code, "warm", remaining, live[:CHUNK]) < 0:
        return False
    for start in range(CHUNK, len(live), CHUNK):
        await gate.record(code, "more", 0, live[start:start + CHUNK])
    log_action(logger, "voucher.gate_warmed", code=code, remaining=remaining, live_in_postgres=len(live),
               redis_only=redis_only)
    return True
