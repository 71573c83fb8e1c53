"""The hold writer: admitted holds are written by one statement each, or one for many that came together.

Each hold is one statement and its own transaction (sql take_seats): a unit of work's BEGIN and COMMIT
would add two round trips, one of them with the showtime's version row locked.

In a wave (a sale opening, or many holds expiring at once) the gate lets a hundred holds through within
milliseconds. Alone, each pays for its own pool checkout, round trip and COMMIT (a WAL flush, with the
showtime's version row locked behind every other hold's). So the holds of one showtime that reach Postgres
in the same turn of the event loop (ticketing.batching) are decided and written by ONE statement
(take_seats_together): about a fifth of the Postgres work per hold. One batch per showtime is under way
at a time in a process; holds that arrive meanwhile form the next one (group commit), so in a wave
batches grow instead of statements queueing on the version row.

A connection goes back to the pool in the background (ticketing.db.released_in_background): the pool's
reset is a round trip that the holds' answers need not wait for.

Nothing changes for a request: each hold is still all-or-nothing and Postgres decides it. The batch
writes a hold only if it surely may; every other hold is asked again on its own, which gives its verdict.
If the batch fails as a whole (the commit-time cap check, a deadlock) nothing of it is written and every
hold is asked on its own. Batches pay off behind the seat gate, which lets through only holds that will
most likely be written; with the gate off most holds reaching Postgres lose and would be asked twice, so
then each hold is one statement.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import asyncpg
from ticketing.batching import TickBatcher
from ticketing.db import released_in_background
from ticketing.logs import log_action

from hold_service.adapters import repository
from hold_service.domain.errors import TooManySeatsHeld
from hold_service.domain.model import TakeSeats, Verdict
from hold_service.service_layer.ports import HoldWriter

logger = logging.getLogger(__name__)


class PostgresHoldWriter(HoldWriter):
    def __init__(self, pool: asyncpg.Pool, batched: bool = True) -> None:
        self.pool, self.batched = pool, batched
        self._batches: TickBatcher[int, TakeSeats, Verdict | Exception] = TickBatcher(self._take_many, serial=True)

    async def take(self, request: TakeSeats) -> Verdict:
        got = await (self._batches.add(request.showtime_id, request) if self.batched else self._take_one(request, {}))
        if isinstance(got, Exception):
            raise got
        assert got is not None
        return got

    async def _take_many(self, showtime_id: int, requests: list[TakeSeats]) -> list[Verdict | Exception]:
        written: dict[uuid.UUID, Verdict] = {}
        if len(requests) > 1:
            try:
                async with released_in_background(self.pool) as conn:
                    written = await repository.take_together(conn, showtime_id, requests)
            except (asyncpg.PostgresError, TooManySeatsHeld) as exc:
                written = {}  # rolled back (the cap check at COMMIT, a deadlock): each on its own
                log_action(logger, "holds.batch_rolled_back", str(exc), level=logging.WARNING,
                           showtime_id=showtime_id, holds=len(requests), error=type(exc).__name__)
        if len(written) == len(requests):  # the usual case behind the gate: no task, no turn of the loop
            return [written[r.hold_id] for r in requests]
        results = await asyncio.gather(*(self._take_one(r, written) for r in requests), return_exceptions=True)
        for result in results:
            if not isinstance(result, Verdict | Exception):
                raise result  # cancelled, or a BaseException that must not be turned into an answer
        return [r for r in results if isinstance(r, Verdict | Exception)]

    async def _take_one(self, request: TakeSeats, written: dict[uuid.UUID, Verdict]) -> Verdict:
        if (got := written.get(request.hold_id)) is not None:
            return got
        async with released_in_background(self.pool) as conn:
            return await repository.take(conn, request)
