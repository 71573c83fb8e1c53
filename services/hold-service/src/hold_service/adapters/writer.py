"""The hold writer: the holds of one showtime that reach Postgres together are decided and written by one
statement.

Each hold is all-or-nothing and Postgres decides it, in one statement that is its own transaction (a unit of
work's BEGIN and COMMIT would add two round trips). The holds of one showtime that arrive in the same turn of
the event loop (ticketing.batching) share that statement (sql take_seats, the one that takes seats for a hold
alone too): one pool checkout, one round trip and one COMMIT (a WAL flush) for all of them. One batch per
showtime is under way at a time in a process; holds that arrive meanwhile form the next one (group commit), so
in a wave batches grow instead of statements queueing for the seats' rows and the disk. Once a batch is
committed, the process's seat-map numberer gives its changes their versions (adapters/seat_map_versions.py).

The batch writes a hold only if it surely may, and refuses one whose seats are taken or unknown as it would
alone; a hold it cannot decide (it lost to an earlier hold of the batch, or to the cap) is asked again on its
own. If the batch fails as a whole (the commit-time cap check, a deadlock) nothing of it is written and every
hold is asked on its own.

A connection goes back to the pool in the background (ticketing.db.released_in_background): the pool's reset
is a round trip that the holds' answers need not wait for.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

import asyncpg
from ticketing.batching import TickBatcher
from ticketing.db import released_in_background
from ticketing.logs import log_action

from hold_service.adapters import best_seats, repository
from hold_service.domain.errors import TooManySeatsHeld
from hold_service.domain.model import BestSeats, TakeSeats, Verdict
from hold_service.service_layer.ports import HoldWriter

logger = logging.getLogger(__name__)
Take = tuple[TakeSeats, str]  # a hold and the cause headers its events carry (taken in the request's context)


class PostgresHoldWriter(HoldWriter):
    def __init__(self, pool: asyncpg.Pool, written: Callable[[], None] = lambda: None) -> None:
        """`written` is told when holds were committed (the seat-map numberer: their versions now)."""
        self.pool, self.written = pool, written
        self._batches: TickBatcher[int, Take, Verdict | Exception] = TickBatcher(self._take_many, serial=True)

    async def take(self, request: TakeSeats) -> Verdict:
        got = await self._batches.add(request.showtime_id, (request, repository.cause()))
        self.written()
        if isinstance(got, Exception):
            raise got
        assert got is not None
        return got

    async def take_best(self, request: TakeSeats, best: BestSeats) -> tuple[TakeSeats, Verdict]:
        """Not batched: each choice is its own transaction, whose locks other choices pass over."""
        async with released_in_background(self.pool) as conn:
            taken = await best_seats.take_best(conn, request, best, repository.cause())
        self.written()
        return taken

    async def _take_many(self, showtime_id: int, takes: list[Take]) -> list[Verdict | Exception]:
        decided = await self._together(showtime_id, takes) if len(takes) > 1 else {}
        verdicts = [decided.get(r.hold_id) for r, _ in takes]
        if None not in verdicts:  # the usual case: no task, no turn of the loop
            return [v for v in verdicts if v is not None]
        results = await asyncio.gather(*(self._take_one(t, decided) for t in takes), return_exceptions=True)
        for result in results:
            if not isinstance(result, Verdict | Exception):
                raise result  # cancelled, or a BaseException that must not be turned into an answer
        return [r for r in results if isinstance(r, Verdict | Exception)]

    async def _together(self, showtime_id: int, takes: list[Take]) -> dict[uuid.UUID, Verdict | None]:
        try:
            async with released_in_background(self.pool) as conn:
                return await repository.take_together(conn, showtime_id, takes)
        except (asyncpg.PostgresError, TooManySeatsHeld) as exc:  # rolled back: each hold on its own
            log_action(logger, "holds.batch_rolled_back", str(exc), level=logging.WARNING,
                       showtime_id=showtime_id, holds=len(takes), error=type(exc).__name__)
            return {}

    async def _take_one(self, take: Take, decided: dict[uuid.UUID, Verdict | None]) -> Verdict:
        if (got := decided.get(take[0].hold_id)) is not None:
            return got
        async with released_in_background(self.pool) as conn:
            return await repository.take(conn, *take)
