"""Refilling a showtime's Redis seat gate from Postgres after Redis lost it.

The gate (adapters/seat_gate.py) says "taken" only for the keys live holds set. After Redis lost them (a
flush, a restart, a failover to a replica that missed writes) it knows only the holds taken since, and every
click on a seat held or booked before the loss reaches Postgres, for the rest of the sale. So when the gate
script finds the showtime's mark gone, the request that saw it starts a refill in the background (one per
showtime and process at a time; after a failed one, none for RETRY_SECONDS): the held and booked seats of the
showtime, if it is on sale (sql gate_seats), go back as keys naming their holds, then the mark. A key a
request in flight set for one of those seats is overwritten: Postgres refuses that request (the seat is
taken), and its release, checked by owner, then leaves the refilled key alone; a refill that kept such keys
would lose the busiest seats, those clicked at the moment of the refill. A hold released while the refill
ran (or a seat taken by a newer hold meanwhile) could leave a key that names a hold no longer on the seat;
so Postgres is read again once the keys are written, and those keys are released (a release committed
after that read releases its keys itself).

voucher-service warms its gate the same way (service_layer/warmup.py). The difference: a seat gate that
knows too little only costs Postgres work (Postgres decides every hold), so holds go on meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from prometheus_client import Counter
from ticketing.logs import log_action

from hold_service.service_layer.ports import Deps, GateSeat

logger = logging.getLogger(__name__)
MARK_SECONDS = 86400.0  # how long a refilled gate (and a BOOKED seat's key) lasts before the next refill
RETRY_SECONDS = 1.0  # after a refill that failed (Postgres or Redis down), the next one waits this long
REFILLS = Counter("ticketing_seat_gate_refills_total", "Refills of a showtime's seat gate after Redis lost it",
                  ["outcome"])
_running: set[asyncio.Task[None]] = set()  # referenced until done (the loop keeps only weak references)


def refill_soon(showtime_id: int, deps: Deps) -> None:
    """Start a refill of the showtime's gate unless one runs here, or failed less than RETRY_SECONDS ago."""
    blocked = deps.gate_refills  # showtime -> until when no new refill starts (inf: one is running)
    if time.monotonic() < blocked.get(showtime_id, 0.0):
        return
    blocked[showtime_id] = math.inf
    task = asyncio.create_task(_refill_logged(showtime_id, deps))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def _refill_logged(showtime_id: int, deps: Deps) -> None:
    done = None
    try:
        done = await refill_gate(showtime_id, deps)
    except Exception as exc:  # Postgres down: a request that sees the mark gone after the pause tries again
        REFILLS.labels("failed").inc()
        log_action(logger, "gate.refill_failed", str(exc), level=logging.WARNING, showtime_id=showtime_id,
                   error=type(exc).__name__)
    finally:
        if done is None:
            deps.gate_refills[showtime_id] = time.monotonic() + RETRY_SECONDS
        else:
            deps.gate_refills.pop(showtime_id, None)


async def refill_gate(showtime_id: int, deps: Deps) -> int | None:
    """The keys set; None when nothing was refilled (not on sale, or Redis unavailable)."""
    seats = await _gate_seats(showtime_id, deps)
    if seats is None:
        return None
    written = await deps.admission.refill(showtime_id, seats, MARK_SECONDS)
    if written is None:
        REFILLS.labels("redis_unavailable").inc()
        return None
    now = {(s.code, s.hold_id) for s in await _gate_seats(showtime_id, deps) or []}
    gone = [s for s in seats if (s.code, s.hold_id) not in now]
    for seat in gone:
        await deps.admission.release(showtime_id, [seat.code], seat.hold_id)
    REFILLS.labels("refilled").inc()
    log_action(logger, "gate.refilled", showtime_id=showtime_id, seats=len(seats), keys_set=written,
               released_since=len(gone))
    return written


async def _gate_seats(showtime_id: int, deps: Deps) -> list[GateSeat] | None:
    async with deps.statements() as uow:
        return await uow.holds.gate_seats(showtime_id)
