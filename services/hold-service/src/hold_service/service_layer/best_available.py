"""Best available: the platform chooses the seats of a hold (docs/best-available.md).

The same steps as a picked hold (service_layer/holds.py): the waiting room's token, the rate limits and the
slot in one Redis round trip, then Postgres, which chooses the seats and takes them in one transaction
(adapters/best_seats.py take_best): the choice is made on the rows it locks, so two requests never choose
the same seat and concurrent requests pass over each other's runs instead of queueing for the best one.
The gate cannot say "taken" before Postgres (no seat is named yet); once Postgres has chosen, the hold's
seats go into the gate, so that clicks on them are refused in Redis.
"""

from __future__ import annotations

from hold_service.domain.errors import AdmissionRequired, RateLimited, SeatsUnavailable
from hold_service.domain.model import BestSeats, Hold, HoldSeats, TakeSeats
from hold_service.service_layer.gate_refill import refill_soon
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.room_rush import note_arrival
from hold_service.service_layer.waiting_room import admission_for


async def hold_best(cmd: HoldSeats, best: BestSeats, deps: Deps) -> Hold:
    await note_arrival(cmd.showtime_id, cmd.customer_id, deps)
    slot = await admission_for(cmd, deps)
    ttl = deps.settings.hold_ttl_seconds
    got = await deps.admission.admit(cmd.customer_id, cmd.showtime_id, [], cmd.hold_id, ttl,
                                     address=cmd.address, slot=slot)
    if got.gate_lost:
        refill_soon(cmd.showtime_id, deps)
    if got.wait is not None:
        raise RateLimited(got.wait)
    if got.slot_ended:
        raise AdmissionRequired("your admission has ended (paid, cancelled or lapsed): join the queue again")
    request = TakeSeats(showtime_id=cmd.showtime_id, seats=[], hold_id=cmd.hold_id, customer_id=cmd.customer_id,
                        ttl_seconds=ttl, booking_id=cmd.booking_id,
                        cap=deps.settings.max_seats_held_per_customer_showtime,
                        close_minutes=deps.settings.sales_close_minutes_before_start)
    return await _written(request, best, deps)


async def _written(request: TakeSeats, best: BestSeats, deps: Deps) -> Hold:
    taken, verdict = await deps.writer.take_best(request, best)
    if verdict.earlier:  # a keyed retry of a hold written before: that hold (holds._earlier)
        async with deps.statements() as uow:
            hold = await uow.holds.get(request.hold_id)
        if hold is None or hold.customer_id != request.customer_id:
            raise SeatsUnavailable(taken.seats)
        return hold
    hold = verdict.hold(taken)
    await deps.admission.note(hold.showtime_id, hold.seats, hold.hold_id, hold.expires_at)
    return hold
