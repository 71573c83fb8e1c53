"""Sending an order's VoucherReserved (flash mode) and the pending rule.

A send whose outcome is unknown (no ack in time, a broker error after the message was queued) may still
land. The use then stays held in the gate, pending, and the client gets 503: giving it back at once would
let the gate hand it out again while Postgres later counts both (201s past the limit, then ck_used refusing
a promised use). A retry with the same orderId sends the same VoucherReserved again (its eventId derives
from (code, orderId), so the writer's inbox and ON CONFLICT (order_id) absorb the copy) and answers 201 once
it is acknowledged. A pending order nobody retries is settled by the reconciliation (jobs.py): marked sent
if Postgres has it, else, after the grace period, tombstoned in Postgres first and then given back, so a
late landing can never count.

Once acknowledged the use is real, and the 201 does not wait for the gate to mark the order sent (P -> R,
one script run per voucher for the acks that came together, `note_sent`): a retry meanwhile finds it pending
and sends it again (absorbed as above), and a mark lost with Redis or the process is made by the
reconciliation once Postgres has the use, as before when the mark failed.

Only a send that surely never left (SendRefused: not connected, refused before it was queued) is forgotten
at once, so that the retry may reserve afresh; and not once a retry has sent it again (state S: a copy may
be in Kafka), which release.lua checks atomically.
"""

from __future__ import annotations

import logging
import uuid

from ticketing.events import VoucherReserved, utcnow
from ticketing.logs import log_action

from voucher_service.domain import commands
from voucher_service.domain.errors import GateUnavailable, SendRefused
from voucher_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)
# Names the eventIds of VoucherReserved: one per (voucher, order), the same for every send of that order.
RESERVED_EVENTS = uuid.UUID("6f1c1f0e-5a4e-4d53-9a43-0b6c3f2d8e11")


def reserved_event(cmd: commands.ReserveVoucher) -> VoucherReserved:
    return VoucherReserved(eventId=uuid.uuid5(RESERVED_EVENTS, f"{cmd.code}/{cmd.order_id}"), code=cmd.code,
                           customerId=cmd.customer_id, orderId=cmd.order_id, orderAmount=cmd.order_amount,
                           occurredAt=utcnow())


async def send(cmd: commands.ReserveVoucher, deps: Deps, *, reserved_now: bool) -> None:
    """Send the order's VoucherReserved; 201 only once acknowledged. `reserved_now`: this request took the
    use, so it may forget it when the message surely never left."""
    assert deps.publisher is not None
    try:
        await deps.publisher.publish(reserved_event(cmd))
    except SendRefused as exc:
        log_action(logger, "voucher.flash_send_refused", str(exc), level=logging.WARNING,
                   code=cmd.code, order_id=cmd.order_id)
        if reserved_now:
            await _forget(cmd, deps)
        raise GateUnavailable("the reservation could not be recorded (Kafka); retry") from exc
    except Exception as exc:  # the message may still land: the use stays held, pending (see above)
        log_action(logger, "voucher.flash_send_unknown", str(exc), level=logging.WARNING,
                   code=cmd.code, order_id=cmd.order_id, error=type(exc).__name__)
        raise GateUnavailable(f"order {cmd.order_id}: the reservation is still being recorded; retry with "
                              "the same orderId") from exc
    deps.gate.note_sent(cmd.code, cmd.order_id)  # the use is real (Kafka has it): 201 without waiting


async def _forget(cmd: commands.ReserveVoucher, deps: Deps) -> None:
    """Undo the gate's reservation of a message that never left; release.lua refuses once a retry has
    sent it again (that retry's answer decides)."""
    try:
        await deps.gate.release(cmd.code, cmd.order_id, forget=True)
    except GateUnavailable:
        pass  # the use stays pending in Redis only: undersell, settled by the reconciliation
