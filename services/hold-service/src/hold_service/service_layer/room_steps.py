"""A waiting room's admission step: Postgres' facts in, the queue's decision in Redis (room_step.lua).

Steps are taken by whichever API process answers the poll that falls due (room_poll.lua keeps the room's
step clock), about every WAITING_ROOM_STEP_SECONDS for the whole cluster, so a room moves while anyone
waits in it and costs nothing otherwise. Two processes stepping at once are harmless (the decision is one
atomic script), only wasteful.

A step reads the room's facts fresh (one query: configuration, lease, seed, and the seats available and
held, lazy expiry included): that is what makes admission inventory-aware, and what tells the queue "sold
out" within a step of the last seat being booked. Postgres records what must outlive Redis:
- that the room's queue was set up once (so a later setup is a rebuild after a loss);
- the shuffle seed, once, at the opening (the first process to get there fixes it; the rest use it);
- the lease: before a slot would end after it, it is extended (rarely: by a slot and a quarter). After a
  Redis loss the rebuilt room admits nobody until the lease has passed, so the tokens handed out before the
  loss and the ones after are never more than the active limit together.
A step that fails (Postgres or Redis down) is logged and skipped: the next poll tries again. Each step taken
or failed is counted as a run of the periodic job `waiting-room-step` (ticketing.job_metrics; on demand: it
runs only while someone waits, so its alert also needs failed runs).
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import replace

from prometheus_client import Counter, Gauge
from ticketing.job_metrics import JobWatch
from ticketing.logs import log_action
from ticketing.metrics import forget
from ticketing.transient import TRANSIENT_ERRORS

from hold_service.domain.waiting_room import StepOutcome
from hold_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)
LEASE_SLOTS = 1.25  # how far one extension of the lease reaches, in slot lengths
MAX_RUNS = 100  # script runs in one step: an opening of 100 chunks (adapters/room_queue.py) fits in one

QUEUED = Gauge("ticketing_waiting_room_queue_length", "Customers waiting in a room's queue (at its last step)",
               ["showtime"], multiprocess_mode="mostrecent")
ACTIVE = Gauge("ticketing_waiting_room_active", "Customers choosing seats (admitted, slot not over)", ["showtime"],
              multiprocess_mode="mostrecent")
RATE = Gauge("ticketing_waiting_room_admission_rate_per_second", "Admissions per second over the last minute",
             ["showtime"],
              multiprocess_mode="mostrecent")
SOLD_OUT = Gauge("ticketing_waiting_room_sold_out", "1 once every seat of the showtime is booked", ["showtime"],
              multiprocess_mode="mostrecent")
ADMITTED = Counter("ticketing_waiting_room_admitted_total", "Customers admitted by this process's steps", ["showtime"])
DROPPED = Counter("ticketing_waiting_room_dropped_total", "Queued or admitted customers dropped for not coming back",
                  ["showtime"])


_WATCHES: dict[str, JobWatch] = {}  # per service name: one job, whichever rooms it steps
# A room this process has not stepped for this long has its series taken off here (at the next step of any
# room): its figures are old, another process steps it or it has closed where this one never saw it.
STALE_SECONDS = 300.0
_STEPPED: dict[int, float] = {}  # showtime -> when this process last recorded its step (monotonic)


def _watch(deps: Deps) -> JobWatch:
    s = deps.settings
    if (watch := _WATCHES.get(s.service_name)) is None:
        watch = _WATCHES[s.service_name] = JobWatch(s.service_name, "waiting-room-step", s.waiting_room_step_seconds,
                                                    "on_demand")
    return watch


async def advance_room(showtime_id: int, deps: Deps) -> StepOutcome | None:
    """One admission step; None when none was taken (no room, or a dependency failed: logged)."""
    try:
        outcome = await _step(showtime_id, deps)
    except TRANSIENT_ERRORS as exc:
        _watch(deps).failed()
        log_action(logger, "room.step_failed", str(exc), level=logging.WARNING, showtime_id=showtime_id,
                   error=type(exc).__name__)
        return None
    if outcome is not None:
        _watch(deps).succeeded()
        _record(showtime_id, outcome)
    return outcome


async def _step(showtime_id: int, deps: Deps) -> StepOutcome | None:
    facts = await deps.rooms.facts(showtime_id)
    if facts is None or not facts.config.enabled:
        forget_room(showtime_id)  # closed since this process last stepped it
        return None
    if not facts.started:
        await deps.rooms.mark_started(showtime_id)  # before Redis has it: a later setup is then a rebuild
    settings = deps.settings
    for _ in range(MAX_RUNS):  # fix the seed, move the pre-opening joiners chunk by chunk, extend the lease, step
        got = await deps.queue.step(facts, settings.admission_token_ttl_seconds)
        if got == "opening":
            continue
        if got == "need_seed":
            facts = replace(facts, seed=await deps.rooms.fix_seed(showtime_id, secrets.token_hex(16)))
        elif got == "need_lease":
            reach = settings.admission_token_ttl_seconds * LEASE_SLOTS + settings.waiting_room_step_seconds
            facts = replace(facts, lease_ms=await deps.rooms.extend_lease(showtime_id, reach))
        elif got is None:  # a failed run of the job
            raise ConnectionError("the room's queue (Redis) is unavailable")
        else:
            return got if isinstance(got, StepOutcome) else None
    return None


def _record(showtime_id: int, outcome: StepOutcome, now: float | None = None) -> None:
    now = time.monotonic() if now is None else now
    for stale in [sid for sid, at in _STEPPED.items() if at < now - STALE_SECONDS]:
        forget_room(stale)
    _STEPPED[showtime_id] = now
    label = str(showtime_id)
    QUEUED.labels(label).set(outcome.queued)
    ACTIVE.labels(label).set(outcome.active)
    RATE.labels(label).set(outcome.rate_per_minute / 60)
    SOLD_OUT.labels(label).set(int(outcome.sold_out))
    if outcome.admitted or outcome.dropped:
        ADMITTED.labels(label).inc(outcome.admitted)
        DROPPED.labels(label).inc(outcome.dropped)
        log_action(logger, "room.stepped", showtime_id=showtime_id, admitted=outcome.admitted,
                   dropped=outcome.dropped, queued=outcome.queued, active=outcome.active)


def forget_room(showtime_id: int) -> None:
    """A closed room's series (per showtime: they would pile up with every showtime that ever had a room)."""
    _STEPPED.pop(showtime_id, None)
    forget(str(showtime_id), QUEUED, ACTIVE, RATE, SOLD_OUT, ADMITTED, DROPPED)
