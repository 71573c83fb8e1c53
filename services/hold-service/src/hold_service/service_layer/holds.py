"""Command handlers for holds: take, read, cancel. One transaction each, Postgres decides."""

from __future__ import annotations

import uuid
from dataclasses import replace

from hold_service.adapters.repository import (
    AMOUNT_PLACEHOLDER,
    EXPIRES_PLACEHOLDER,
    VERSION_PLACEHOLDER,
    Taken,
    TakeSeats,
)
from hold_service.domain.errors import (
    HoldNotActive,
    HoldNotFound,
    InvalidSeats,
    RateLimited,
    SeatsUnavailable,
    ShowtimeNotFound,
    TooManySeatsHeld,
)
from hold_service.domain.model import Hold, HoldSeats, requested_seats
from hold_service.service_layer import events
from hold_service.service_layer.ports import Ports
from hold_service.service_layer.unit_of_work import UnitOfWork


async def check_rate(customer_id: int, ports: Ports) -> None:
    wait = await ports.limiter.retry_after(customer_id)
    if wait is not None:
        raise RateLimited(wait)


async def hold_seats(cmd: HoldSeats, ports: Ports, uow: UnitOfWork | None = None) -> Hold:
    """Gate in Redis, then the conditional UPDATE in Postgres; the gate's keys go if Postgres says no.

    `uow` None: the rate limit and the gate in one Redis round trip (ports.admission), own transaction.
    `uow` given: the caller checked the rate and runs this inside its open transaction (the caller
    commits; Idempotency-Key path).
    """
    seats = requested_seats(cmd.seats, ports.settings.max_seats_per_hold)
    ttl = ports.settings.hold_ttl_seconds
    if uow is None:
        wait, taken = await ports.admission.admit(cmd.customer_id, cmd.showtime_id, seats, cmd.hold_id, ttl)
        if wait is not None:
            raise RateLimited(wait)
    else:
        taken = await ports.gate.try_hold(cmd.showtime_id, seats, cmd.hold_id, ttl)
    if taken:
        raise SeatsUnavailable(taken, decided_by="gate")
    draft, request = _take_seats(cmd, seats, ttl, ports)
    try:
        # Alone inside the caller's transaction, or batched with the showtime's other admitted holds.
        got = await (uow.holds.take(request) if uow is not None else ports.writer.take(request))
        hold = _judge(draft, request, got)
    except BaseException:
        await ports.gate.release(cmd.showtime_id, seats, cmd.hold_id)
        raise
    if uow is None:
        await ports.cache.invalidate(cmd.showtime_id)
    return hold


def _take_seats(cmd: HoldSeats, seats: list[str], ttl: float, ports: Ports) -> tuple[Hold, TakeSeats]:
    """The hold, and the request for take_seats, which decides and writes it and its SeatsHeld in one
    statement."""
    draft = Hold(hold_id=cmd.hold_id, booking_id=cmd.booking_id, customer_id=cmd.customer_id,
                 showtime_id=cmd.showtime_id, seats=seats, status="HELD", expires_at=EXPIRES_PLACEHOLDER,
                 amount_cents=AMOUNT_PLACEHOLDER)  # Postgres writes the real values into the event
    return draft, TakeSeats(showtime_id=cmd.showtime_id, seats=seats, hold_id=cmd.hold_id,
                            customer_id=cmd.customer_id, ttl_seconds=ttl, booking_id=cmd.booking_id,
                            cap=ports.settings.max_seats_held_per_customer_showtime,
                            event=events.seats_held(draft, VERSION_PLACEHOLDER))


def _judge(draft: Hold, request: TakeSeats, got: Taken) -> Hold:
    """The hold take_seats wrote; when it wrote nothing, the verdict says why."""
    seats = request.seats
    if got.price_cents is None:
        raise ShowtimeNotFound(f"showtime {request.showtime_id}")
    if got.held + len(seats) > request.cap:
        raise TooManySeatsHeld(got.held, request.cap, got.frees_in)
    if unknown := [s for s in seats if s not in got.found]:
        raise InvalidSeats("unknown seat codes", unknown)
    if got.taken:
        raise SeatsUnavailable(got.taken)
    if got.expires_at is None:  # cannot happen with the rows locked
        raise SeatsUnavailable(seats)
    return replace(draft, expires_at=got.expires_at, amount_cents=got.price_cents * len(seats))


async def get_hold(hold_id: uuid.UUID, customer_id: int | None, ports: Ports) -> Hold:
    """`customer_id` None = a service principal. Another customer's hold is 'not found' (no oracle)."""
    async with ports.uow() as uow:
        hold = await uow.holds.get(hold_id)
    if hold is None or not hold.visible_to(customer_id):
        raise HoldNotFound(str(hold_id))
    return hold


async def cancel_hold(hold_id: uuid.UUID, customer_id: int, ports: Ports) -> None:
    async with ports.uow() as uow:
        found = await uow.holds.lock(hold_id)
        if found is None or not found[0].visible_to(customer_id):
            raise HoldNotFound(str(hold_id))
        hold, expired = found
        if hold.status == "BOOKED":
            raise HoldNotActive("the hold is booked")
        if hold.status != "HELD":
            return  # already released or expired: DELETE is idempotent
        await release(uow, hold, "EXPIRED" if expired else "CANCELLED")
        await uow.commit()
    await ports.gate.release(hold.showtime_id, hold.seats, hold.hold_id)
    await ports.cache.invalidate(hold.showtime_id)


async def release(uow: UnitOfWork, hold: Hold, reason: str) -> None:
    """Free the seats this hold still holds, end the hold, emit SeatsReleased; in the caller's transaction."""
    freed = await uow.holds.free_seats(hold)
    await uow.holds.set_status(hold.hold_id, "RELEASED" if reason == "CANCELLED" else "EXPIRED")
    changed = uow.holds.bump_version if freed else uow.holds.version
    version = await changed(hold.showtime_id)
    await uow.holds.emit(events.seats_released(hold, reason, version))
