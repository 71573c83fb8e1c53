"""Handlers for holds: take, read, cancel. Postgres decides every one; Redis only turns away early."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from prometheus_client import Counter

from hold_service.domain.commands import CancelHold
from hold_service.domain.errors import (
    AdmissionRequired,
    HoldError,
    HoldNotActive,
    HoldNotFound,
    RateLimited,
    SeatsUnavailable,
)
from hold_service.domain.model import (
    Hold,
    HoldSeats,
    Outcome,
    TakeSeats,
    requested_best,
    requested_seats,
    requested_ticket_types,
)
from hold_service.service_layer import idempotency
from hold_service.service_layer.best_available import hold_best
from hold_service.service_layer.gate_refill import refill_soon
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.room_rush import note_arrival
from hold_service.service_layer.waiting_room import admission_for, end_slot

# Who decided each hold request: the rate limiter, the Redis gate (an early "taken"), or Postgres (the
# conditional UPDATE, which writes or refuses). A gate that admits everything shows as Postgres' refusals.
DECISIONS = Counter("ticketing_hold_decisions_total", "Hold requests by who decided them and how",
                    ["decided_by", "outcome"])


async def hold_seats(cmd: HoldSeats, deps: Deps) -> Hold:
    """POST /showtimes/{id}/holds: the seats, all or nothing. With an Idempotency-Key the first definitive
    outcome is kept and replayed (service_layer/idempotency.py)."""
    hold = _taker(cmd, deps)  # a 422 stores nothing
    if cmd.idempotency_key is None:
        return await hold(cmd)
    if (replayed := await idempotency.claim(cmd, deps)) is not None:
        return idempotency.answer(replayed)
    outcome: Outcome
    try:
        outcome = await hold(cmd.keyed())
    except SeatsUnavailable as exc:
        outcome = exc
    await idempotency.store(cmd, outcome, deps)
    return idempotency.answer(outcome)


def _taker(cmd: HoldSeats, deps: Deps) -> Callable[[HoldSeats], Awaitable[Hold]]:
    """The request checked (else a 422), as the step that takes its hold."""
    if cmd.best is not None:
        best = requested_best(cmd.best, deps.settings.max_seats_per_hold)
        return lambda c: hold_best(c, best, deps)
    seats = requested_seats(cmd.seats, deps.settings.max_seats_per_hold)
    seats_types = (seats, requested_ticket_types(seats, cmd.ticket_types))
    return lambda c: _hold(c, seats_types, deps)


async def _hold(cmd: HoldSeats, seats_types: tuple[list[str], tuple[str, ...]], deps: Deps) -> Hold:
    """The waiting room's admission token (while the room is on), then the rate limits, the slot and the seat
    gate (one Redis round trip), then the writer's conditional UPDATE; the gate's keys go if Postgres says no."""
    seats, ticket_types = seats_types
    await note_arrival(cmd.showtime_id, cmd.customer_id, deps)  # may open the room: then this one needs a token
    slot = await admission_for(cmd, deps)
    ttl = deps.settings.hold_ttl_seconds
    got = await deps.admission.admit(cmd.customer_id, cmd.showtime_id, seats, cmd.hold_id, ttl,
                                     address=cmd.address, slot=slot)
    if got.gate_lost:  # Redis lost this showtime's keys: put back what Postgres knows, in the background
        refill_soon(cmd.showtime_id, deps)
    if got.wait is not None:
        raise _refused("limiter", RateLimited(got.wait))
    if got.slot_ended:
        raise _refused("waiting_room", AdmissionRequired("your admission has ended (paid, cancelled or lapsed): "
                                                         "join the queue again"))
    if got.taken:
        raise _refused("redis", SeatsUnavailable(got.taken, decided_by="gate"))
    return await _write(TakeSeats(showtime_id=cmd.showtime_id, seats=seats, hold_id=cmd.hold_id,
                                  customer_id=cmd.customer_id, ttl_seconds=ttl, booking_id=cmd.booking_id,
                                  cap=deps.settings.max_seats_held_per_customer_showtime,
                                  ticket_types=ticket_types,
                                  close_minutes=deps.settings.sales_close_minutes_before_start), deps)


async def _write(request: TakeSeats, deps: Deps) -> Hold:
    """Postgres' verdict on an admitted hold: the hold, or the refusal (its gate keys then go)."""
    try:
        verdict = await deps.writer.take(request)
        hold = await _earlier(request, deps) if verdict.earlier else verdict.hold(request)
    except BaseException as exc:
        if isinstance(exc, HoldError):
            DECISIONS.labels("postgres", "refused").inc()
        await deps.admission.release(request.showtime_id, request.seats, request.hold_id)
        raise
    DECISIONS.labels("postgres", "admitted").inc()
    return hold


def _refused(by: str, error: HoldError) -> HoldError:
    DECISIONS.labels(by, "refused").inc()
    return error


async def _earlier(request: TakeSeats, deps: Deps) -> Hold:
    """A keyed retry of a hold written before (its outcome was not stored: the process died first)."""
    async with deps.statements() as uow:
        hold = await uow.holds.get(request.hold_id)
    if hold is None or hold.customer_id != request.customer_id:
        raise SeatsUnavailable(request.seats)
    return hold


async def get_hold(hold_id: uuid.UUID, customer_id: int | None, deps: Deps) -> Hold:
    """`customer_id` None = a service principal. Another customer's hold is 'not found' (no oracle)."""
    async with deps.statements() as uow:
        hold = await uow.holds.get(hold_id)
    if hold is None or not hold.visible_to(customer_id):
        raise HoldNotFound(str(hold_id))
    return hold


async def cancel_hold(cmd: CancelHold, deps: Deps) -> None:
    """HELD -> RELEASED (or EXPIRED if its time passed), seats free at once; idempotent; 409 once BOOKED."""
    async with deps.uow() as uow:
        hold = await uow.holds.get(cmd.hold_id)
        if hold is None or not hold.visible_to(cmd.customer_id):
            raise HoldNotFound(str(cmd.hold_id))
        released = await uow.holds.release(cmd.hold_id, "CANCELLED")
        if released is None and (now := await uow.holds.get(cmd.hold_id)) and now.status == "BOOKED":
            raise HoldNotActive("the hold is booked")  # maybe a moment ago; released or expired: 204
        await uow.commit()
    if released is not None:
        await deps.admission.release(hold.showtime_id, hold.seats, hold.hold_id)
    await end_slot(hold.showtime_id, hold.customer_id, deps)  # cancelling ends his waiting-room slot
