"""POST /holds with an Idempotency-Key: a wrapper around the same hold_seats.

The key is claimed with the request's fingerprint (another body under the same key: 422). The hold's ids
follow from (customer, key), so every retry asks Postgres for the same hold: a twin running at the same
time, or a retry after a crash, gets that hold back instead of a second one. The first definitive outcome
(the hold, or seats unavailable) is stored and replayed; anything else (rate limit, 503) lets a retry
run again.
"""

from __future__ import annotations

from hold_service.domain.errors import IdempotencyKeyReused, SeatsUnavailable
from hold_service.domain.model import Hold, HoldSeats, Outcome, outcome_from, outcome_record, requested_seats
from hold_service.service_layer.holds import hold_seats
from hold_service.service_layer.ports import Deps


async def hold_seats_once(cmd: HoldSeats, deps: Deps) -> Hold:
    """The hold; raises SeatsUnavailable (stored too) or whatever hold_seats raises."""
    if cmd.idempotency_key is None:
        return await hold_seats(cmd, deps)
    requested_seats(cmd.seats, deps.settings.max_seats_per_hold)  # a 422 stores nothing
    key = cmd.idempotency_key
    async with deps.uow() as uow:
        stored = await uow.keys.claim(cmd.customer_id, key, cmd.fingerprint())
        await uow.commit()
    if stored is not None:
        if stored["fingerprint"] != cmd.fingerprint():
            raise IdempotencyKeyReused("this Idempotency-Key was used with another request")
        if stored["outcome"] is not None:
            return _answer(outcome_from(stored["outcome"]))
    outcome: Outcome
    try:
        outcome = await hold_seats(cmd.keyed(), deps)
    except SeatsUnavailable as exc:
        outcome = exc
    async with deps.uow() as uow:
        await uow.keys.store(cmd.customer_id, key, outcome_record(outcome))
        await uow.commit()
    return _answer(outcome)


def _answer(outcome: Outcome) -> Hold:
    if isinstance(outcome, SeatsUnavailable):
        raise outcome
    return outcome
