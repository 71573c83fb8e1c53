"""booking-events -> the voucher use of the payment they name (orderId = paymentId; outcomes.py).

Runs inside the consumer's transaction (`deps.uow` joined to it), so the effect and the inbox row are
one fact.
"""

from __future__ import annotations

from voucher_service.domain import commands
from voucher_service.service_layer import handlers, outcomes
from voucher_service.service_layer.ports import Deps


async def settle_use(cmd: commands.SettleUse, deps: Deps) -> bool:
    """Confirm or release the use. False when Postgres holds no such use yet (a flash reservation in
    flight): the outcome is parked, and the writer applies it when the use lands. A stale event raises
    ReservationReleased or ReservationConfirmed and changes nothing."""
    await outcomes.take_turn(deps, [cmd.order_id])
    if cmd.outcome == "CONFIRMED":
        applied = await handlers.confirm_reservation(commands.ConfirmReservation(cmd.order_id), deps)
    else:
        applied = await handlers.release_reservation(commands.ReleaseReservation(cmd.order_id), deps)
    if not applied:
        async with deps.uow() as uow:
            await outcomes.park(uow, cmd.order_id, cmd.outcome)
            await uow.commit()
    return applied
