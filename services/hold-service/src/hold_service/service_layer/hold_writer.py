"""Holds admitted together are written together: one statement and one COMMIT for many holds.

In a wave (a sale opening, or many holds expiring at once) the gate lets a hundred holds through
within milliseconds. Alone, each pays for its own pool checkout, round trips and COMMIT (a WAL flush,
and the commit-time version stamp waiting on the showtime's row behind every other hold's). Here the
holds of one showtime that reach Postgres in the same turn of the event loop (ticketing.batching) are
decided and written by ONE statement (sql take_seats_together) in one transaction: about a fifth of
the Postgres work per hold. One batch per showtime is under way at a time in a worker; holds that
arrive meanwhile form the next one (group commit), so in a wave batches grow instead of transactions
queueing on the showtime's version row.

Nothing changes for a request: each hold is still all-or-nothing and Postgres decides it. The batch
writes a hold only if it surely may (its seats free, the customer within the cap, no seat and no
customer already in an earlier hold of the batch); every other hold is asked again on its own with
take_seats, which gives its verdict. If the batch fails as a whole (the commit-time cap check, a
deadlock) it is rolled back and every hold is asked on its own. Batches pay off behind the seat gate,
which lets through only holds that will most likely be written; with the gate off most holds reaching
Postgres lose and would be asked twice, so then each hold is one statement.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

import asyncpg
from ticketing.batching import TickBatcher
from ticketing.logs import log_action

from hold_service.adapters.repository import BatchRefused, Taken, TakeSeats
from hold_service.domain.errors import TooManySeatsHeld
from hold_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


class HoldWriter:
    def __init__(self, uow: Callable[[bool], UnitOfWork], batched: bool = True) -> None:
        self.uow = uow  # (transaction) -> a unit of work
        self.batched = batched
        self._batches: TickBatcher[int, TakeSeats, Taken | Exception] = TickBatcher(self._take_many, serial=True)

    async def take(self, request: TakeSeats) -> Taken:
        """This hold decided and, if it may be, written: in a batch with the showtime's other holds of
        this loop turn (batched), else alone."""
        got = await (self._batches.add(request.showtime_id, request) if self.batched
                     else self._take_one(request, {}))
        if isinstance(got, Exception):
            raise got
        assert got is not None
        return got

    async def _take_many(self, showtime_id: int, requests: list[TakeSeats]) -> list[Taken | Exception]:
        written: dict[uuid.UUID, Taken] = {}
        if len(requests) > 1:
            try:
                async with self.uow(True) as uow:
                    written = await uow.holds.take_together(showtime_id, requests)
                    await uow.commit()  # the commit-time checks run here (migrations 0002, 0003)
            except (asyncpg.PostgresError, TooManySeatsHeld, BatchRefused) as exc:
                written = {}  # rolled back (the cap check at COMMIT, a deadlock): each on its own
                log_action(logger, "holds.batch_rolled_back", str(exc), level=logging.WARNING,
                           showtime_id=showtime_id, holds=len(requests), error=type(exc).__name__)
        results = await asyncio.gather(*(self._take_one(r, written) for r in requests), return_exceptions=True)
        for result in results:
            if not isinstance(result, Taken | Exception):
                raise result  # cancelled, or a BaseException that must not be turned into an answer
        return [r for r in results if isinstance(r, Taken | Exception)]

    async def _take_one(self, request: TakeSeats, written: dict[uuid.UUID, Taken]) -> Taken:
        if (got := written.get(request.hold_id)) is not None:
            return got
        async with self.uow(False) as uow:  # one statement: its own transaction
            got = await uow.holds.take(request)
            await uow.commit()
            return got
