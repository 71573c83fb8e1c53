"""The door: a scanner's check-in (online), the scans an offline scanner recorded, and a showtime's counts.

Each scan is judged in its own transaction: the ticket's signature (any key of the keyring, by the id it
names), the booking's state and the showtime's window (domain/door.py), then the one conditional UPDATE that
admits the booking (sql/door.sql admit_booking) with TicketCheckedIn written to the outbox beside it. A scan
that lost the UPDATE reads the booking again, in a new statement that sees the winner's commit, to say when
and where it was admitted.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from ticketing.logs import log_action
from ticketing.tickets import InvalidTicket, TicketPayload

from hold_service.domain import door
from hold_service.domain.door import BookingAtDoor, Scan
from hold_service.domain.errors import AlreadyCheckedIn, DoorRefusal, InvalidScan, TicketInvalid, WrongShowtime
from hold_service.service_layer import events
from hold_service.service_layer.door_ports import DoorCounts
from hold_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Admitted:
    """An admitted scan: the booking whose group enters."""

    booking: BookingAtDoor
    at: datetime
    door: str


async def check_in(scan: Scan, deps: Deps) -> Admitted:
    """An online scan, now; raises the DoorRefusal that says why not."""
    return await _judge(scan, deps.now(), deps, offline=False)


async def check_in_batch(scans: list[Scan], deps: Deps) -> list[Admitted | DoorRefusal]:
    """An offline scanner's scans, one answer each in their order. They are applied earliest first, so that of
    two scans of one ticket in the batch the earlier is the admission; a scan whose `at` is further in the
    future than CHECKIN_CLOCK_SKEW_SECONDS is refused alone."""
    latest = deps.now() + timedelta(seconds=deps.settings.checkin_clock_skew_seconds)
    answers: dict[int, Admitted | DoorRefusal] = {}
    for n in sorted(range(len(scans)), key=lambda i: (scans[i].at or latest, i)):
        at = scans[n].at
        try:
            if at is None or at > latest:
                raise InvalidScan("the scan's time `at` is in the future: check the scanner's clock")
            answers[n] = await _judge(scans[n], at, deps, offline=True)
        except DoorRefusal as refused:
            answers[n] = refused
    return [answers[n] for n in range(len(scans))]


async def counts(showtime_id: int, deps: Deps) -> DoorCounts:
    async with deps.uow() as uow:
        return await uow.door.counts(showtime_id)


async def _judge(scan: Scan, at: datetime, deps: Deps, *, offline: bool) -> Admitted:
    payload = _verified(scan.ticket, deps)
    if payload.showtime_id != scan.showtime_id:
        raise WrongShowtime(f"this ticket is for showtime {payload.showtime_id}, not {scan.showtime_id}")
    booking_id = _booking_id(payload)
    opens = deps.settings.checkin_opens_minutes
    async with deps.uow() as uow:
        booking = await uow.door.booking(booking_id)
        if (refused := door.refusal(booking, payload.showtime_id, at, scan.door, opens, offline=offline)) is not None:
            raise refused
        assert booking is not None
        if booking.checked_in_at is not None and booking.repeats(at, scan.door):
            return Admitted(booking, at, scan.door)  # the same offline scan sent again: its answer again
        if await uow.door.admit(booking_id, at, scan.door, offline):
            await uow.holds.emit(events.ticket_checked_in(booking, scan.door, at))
            await uow.commit()
            log_action(logger, "door.admitted", booking_id=str(booking_id), door=scan.door, offline=offline)
            return Admitted(booking, at, scan.door)
        now = await uow.door.booking(booking_id)
    refused = door.refusal(now, payload.showtime_id, at, scan.door, opens, offline=offline)
    if refused is None and now is not None and now.repeats(at, scan.door):
        return Admitted(now, at, scan.door)  # the same offline scan, sent twice at once
    raise refused or AlreadyCheckedIn(at, scan.door)


def _verified(text: str, deps: Deps) -> TicketPayload:
    try:
        return deps.tickets.verify(text)
    except InvalidTicket as exc:
        raise TicketInvalid(str(exc)) from None


def _booking_id(payload: TicketPayload) -> uuid.UUID:
    try:
        return uuid.UUID(payload.booking_id)
    except ValueError:
        raise TicketInvalid("the ticket names no booking") from None
