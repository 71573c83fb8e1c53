"""Normal mode's reservations on Postgres (sql reserve_together and reserve_use)."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

import asyncpg
from ticketing.batching import TickBatcher
from ticketing.db import released_in_background

from voucher_service.adapters.repository import QUERIES
from voucher_service.domain.errors import RedemptionConflict
from voucher_service.domain.model import NormalAttempt, Redemption
from voucher_service.service_layer.ports import NormalReservations


class PgNormalReservations(NormalReservations):
    """Normal mode's reservations, by the voucher's hot row.

    Each reservation alone would pay for a statement, a COMMIT and the hot row's UPDATE of its own, one after
    the other behind that row's lock. The reservations of one voucher that reach this process in the same
    turn of the event loop (ticketing.batching) are written by ONE statement (reserve_together), one flush per
    voucher at a time (group commit: under load the batches grow instead of statements queueing on the row).
    The batch writes only the reservations it surely may, all of them or none; every other one is asked again
    on its own (reserve_use), which gives its verdict. A connection goes back to the pool in the background
    (ticketing.db.released_in_background): its reset is a round trip the answers need not wait for.
    """

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self._batches: TickBatcher[str, Request, NormalAttempt | Exception] = TickBatcher(self._reserve_many,
                                                                                          serial=True)

    async def reserve(self, code: str, customer_id: int, order_id: str, amount: int) -> NormalAttempt:
        got = await self._batches.add(code, Request(customer_id, order_id, amount))
        if isinstance(got, Exception):
            raise got
        assert got is not None
        return got

    async def _reserve_many(self, code: str, requests: list[Request]) -> list[NormalAttempt | Exception]:
        written: set[str] = set()
        if len(requests) > 1:
            try:
                async with released_in_background(self.pool) as conn:
                    rows = await conn.fetch(QUERIES.reserve_together, code, [r.customer_id for r in requests],
                                            [r.order_id for r in requests], [r.amount for r in requests])
                written = {row["order_id"] for row in rows}
            except asyncpg.UniqueViolationError:
                pass  # a twin committed first: nothing written, each on its own
        if len(written) == len(requests):  # the usual case under load: no task, no turn of the loop
            return [RESERVED] * len(requests)
        results = await asyncio.gather(*(self._reserve_one(code, r, written) for r in requests),
                                       return_exceptions=True)
        for result in results:
            if not isinstance(result, NormalAttempt | Exception):
                raise result  # cancelled, or a BaseException that must not be turned into an answer
        return [r for r in results if isinstance(r, NormalAttempt | Exception)]

    async def _reserve_one(self, code: str, request: Request, written: set[str]) -> NormalAttempt:
        if request.order_id in written:
            return RESERVED
        async with released_in_background(self.pool) as conn:
            try:
                row = await conn.fetchrow(QUERIES.reserve_use, code, *request)
            except asyncpg.UniqueViolationError as exc:
                raise RedemptionConflict(str(exc)) from exc
        assert row is not None  # the statement always returns its one row
        existing = None if row["voucher_code"] is None else Redemption(
            row["voucher_code"], row["customer_id"], request.order_id, row["order_amount"], row["status"])
        return NormalAttempt(row["outcome"], existing)


class Request(NamedTuple):
    customer_id: int
    order_id: str
    amount: int


RESERVED = NormalAttempt("RESERVED")
