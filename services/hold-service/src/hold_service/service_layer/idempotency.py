"""A hold request with an Idempotency-Key (service_layer/holds.py asks these around the hold).

The key is claimed with the request's fingerprint (another body under the same key: 422). The hold's ids
follow from (customer, key), so every retry asks Postgres for the same hold: a twin running at the same
time, or a retry after a crash, gets that hold back instead of a second one. The first definitive outcome
(the hold, or seats unavailable) is stored and replayed; anything else (rate limit, 503) lets a retry
run again.
"""

from __future__ import annotations

from hold_service.domain.errors import IdempotencyKeyReused, SeatsUnavailable
from hold_service.domain.model import Hold, HoldSeats, Outcome, outcome_from, outcome_record
from hold_service.service_layer.ports import Deps


async def claim(cmd: HoldSeats, deps: Deps) -> Outcome | None:
    """Claims the key (committed at once, so that a twin sees it); the stored outcome of an earlier request
    under it, or None: go on. Raises IdempotencyKeyReused for another request under the same key."""
    assert cmd.idempotency_key is not None
    async with deps.statements() as uow:
        stored = await uow.keys.claim(cmd.customer_id, cmd.idempotency_key, cmd.fingerprint())
        await uow.commit()
    if stored is None:
        return None
    if stored["fingerprint"] != cmd.fingerprint():
        raise IdempotencyKeyReused("this Idempotency-Key was used with another request")
    return None if stored["outcome"] is None else outcome_from(stored["outcome"])


async def store(cmd: HoldSeats, outcome: Outcome, deps: Deps) -> None:
    """Keeps the first definitive outcome under the key (a twin's later one changes nothing)."""
    assert cmd.idempotency_key is not None
    async with deps.statements() as uow:
        await uow.keys.store(cmd.customer_id, cmd.idempotency_key, outcome_record(outcome))
        await uow.commit()


def answer(outcome: Outcome) -> Hold:
    if isinstance(outcome, SeatsUnavailable):
        raise outcome
    return outcome
