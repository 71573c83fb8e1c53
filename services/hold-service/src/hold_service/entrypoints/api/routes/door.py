"""The door: staff scanners check tickets in (online, or the scans they kept while offline); anyone may read
the keys a scanner verifies tickets with offline. Routes are thin."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from fastapi.responses import Response
from ticketing.api.security import Staff, StaffOrAdmin

from hold_service.domain.door import Scan
from hold_service.domain.errors import DoorRefusal
from hold_service.domain.model import MAX_SHOWTIME_ID
from hold_service.entrypoints.api.deps import DepsDep
from hold_service.entrypoints.api.door_bodies import (
    CheckinAdmitted,
    CheckinBatch,
    CheckinRefused,
    CheckinRequest,
    CheckinResults,
    DoorCountsPublic,
    PublicKeys,
    too_many,
)
from hold_service.entrypoints.api.errors import api_error
from hold_service.service_layer import door

router = APIRouter(tags=["door"])
_REFUSALS: dict[int | str, dict[str, Any]] = {
    409: {"description": "ALREADY_CHECKED_IN (+ at, door), TICKET_REVOKED, WRONG_SHOWTIME, TOO_EARLY, CHECKIN_CLOSED"},
    422: {"description": "TICKET_INVALID (bad signature or shape), VALIDATION_ERROR"}}


@router.post("/checkins", response_model=CheckinAdmitted, name="check_in", responses={403: {}, **_REFUSALS})
async def check_in(body: CheckinRequest, _: Staff, deps: DepsDep) -> CheckinAdmitted:
    """A door scanner (role staff) checks a ticket in, now: its booking's group is admitted once, whichever
    door scans it first; a scan after that, at any door, is 409 ALREADY_CHECKED_IN with when and where."""
    try:
        done = await door.check_in(Scan(body.ticket, body.showtimeId, body.door), deps)
    except DoorRefusal as exc:
        raise api_error(exc) from exc
    return CheckinAdmitted.of(done)


@router.post("/checkins/batch", response_model=CheckinResults, name="check_in_batch", responses={403: {}, 422: {}})
async def check_in_batch(body: CheckinBatch, _: Staff, deps: DepsDep) -> CheckinResults:
    """The scans a scanner recorded while offline, each with when it saw the ticket: one result per scan, in
    their order. Of the scans of one ticket the earliest is the admission (also against an admission already
    recorded later), the others are ALREADY_CHECKED_IN; a scan sent again gets its own answer again."""
    if len(body.scans) > deps.settings.checkin_batch_max_scans:
        raise too_many(deps.settings.checkin_batch_max_scans)
    scans = [Scan(s.ticket, s.showtimeId, s.door, s.at) for s in body.scans]
    results = await door.check_in_batch(scans, deps)
    return CheckinResults(results=[CheckinRefused.of(r) if isinstance(r, DoorRefusal) else CheckinAdmitted.of(r)
                                   for r in results])


@router.get("/showtimes/{showtime_id}/checkins", response_model=DoorCountsPublic, name="door_counts",
            responses={403: {}})
async def door_counts(_: StaffOrAdmin, deps: DepsDep,
                      showtime_id: int = Path(ge=1, le=MAX_SHOWTIME_ID)) -> DoorCountsPublic:
    """Staff and operators: the showtime's bookings and seats booked, and those admitted at the door so far."""
    c = await door.counts(showtime_id, deps)
    return DoorCountsPublic(showtimeId=showtime_id, bookings=c.booked, seats=c.booked_seats,
                            admittedBookings=c.admitted, admittedSeats=c.admitted_seats)


@router.get("/tickets/public-key", response_model=PublicKeys, name="ticket_public_keys")
async def ticket_public_keys(deps: DepsDep, response: Response) -> PublicKeys:
    """Public: the Ed25519 keys a scanner verifies tickets with offline, by id (a ticket's `k` names its key).
    A scanner keeps them and fetches them again now and then: a rotation adds the new key first."""
    ring = deps.tickets
    response.headers["Cache-Control"] = "public, max-age=300"
    keys = ring.published()
    return PublicKeys(kid=keys[0]["kid"], publicKey=keys[0]["x"], keys=keys)
