"""POST /holds with an Idempotency-Key: the first definitive result is stored and replayed.

The key is claimed first in the hold's own transaction: a concurrent twin blocks on the key's row
until the first commits, then replays its result. Only definitive results (created, seats
unavailable) are stored; anything else rolls the claim back so a retry runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hold_service.domain.errors import HoldError, IdempotencyKeyReused, SeatsUnavailable
from hold_service.domain.model import Hold, HoldSeats, requested_seats
from hold_service.service_layer.holds import check_rate, hold_seats
from hold_service.service_layer.ports import Ports

Rendered = tuple[int, dict[str, Any]]
Render = Callable[[Hold | HoldError], Rendered]


async def hold_seats_once(cmd: HoldSeats, ports: Ports, render: Render) -> Rendered:
    if cmd.idempotency_key is None:
        return render(await hold_seats(cmd, ports))  # rate limit + gate in one Redis round trip
    # Bad input is refused before anything is stored (a 422 changes nothing, NUL bytes never reach Postgres).
    requested_seats(cmd.seats, ports.settings.max_seats_per_hold)
    await check_rate(cmd.customer_id, ports)
    key = cmd.idempotency_key
    async with ports.uow() as uow:
        stored = await uow.keys.claim(cmd.customer_id, key, cmd.fingerprint())
        if stored is not None:
            if stored["request_hash"] != cmd.fingerprint():
                raise IdempotencyKeyReused("this Idempotency-Key was used with another request")
            return int(stored["status_code"]), dict(stored["body"])
        outcome: Hold | HoldError
        try:
            outcome = await hold_seats(cmd, ports, uow)
        except SeatsUnavailable as exc:
            outcome = exc
        status, body = render(outcome)
        await uow.keys.store(cmd.customer_id, key, status, body)
        try:
            await uow.commit()  # where the cap's race check runs
        except BaseException:
            if isinstance(outcome, Hold):  # nothing was written: free the gate's keys now, not at their TTL
                await ports.gate.release(cmd.showtime_id, outcome.seats, outcome.hold_id)
            raise
    if isinstance(outcome, Hold):
        await ports.cache.invalidate(cmd.showtime_id)
    return status, body
