"""Normal mode's reservations on Postgres (sql reserve_together and reserve_use)."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

import asyncpg
from ticketing.batching import TickBatcher
from ticketing.db import released_in_background

from voucher_service.adapters.repository import QUERIES
from voucher_service.adapters.sold_out import SoldOut
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

    Once a reservation found no use left, the crowd that follows is answered OUT_OF_STOCK from the process's
    sold-out cache (adapters/sold_out.py) without touching PostgreSQL: the batch that found the voucher sold
    out reads its redemptions once (`redemptions_of_voucher`, up to HOLDERS_KEPT), and the retries of orders
    that hold a use are told apart from that copy (their 201). A read of each batch's order ids was 0.36
    transactions per sold-out answer (docs/benchmarks.md); it is still the way for a voucher with more
    redemptions than that. The copy is as old as the cache's entry: an order that took a use given back in
    another process since is answered OUT_OF_STOCK here, as a new order is, until the entry lapses.
    """

    def __init__(self, pool: asyncpg.Pool, sold_out_ttl: float = 0.0) -> None:
        self.pool = pool
        self._sold_out = SoldOut(sold_out_ttl)
        self._holders: dict[str, dict[str, Redemption]] = {}  # code -> order id -> redemption, while sold out
        self._batches: TickBatcher[str, Request, NormalAttempt | Exception] = TickBatcher(self._reserve_many,
                                                                                          serial=True)

    async def reserve(self, code: str, customer_id: int, order_id: str, amount: int) -> NormalAttempt:
        got = await self._batches.add(code, Request(customer_id, order_id, amount))
        if isinstance(got, Exception):
            raise got
        assert got is not None
        return got

    def use_returned(self, code: str) -> None:
        self._sold_out.forget(code)
        self._holders.pop(code, None)

    async def _reserve_many(self, code: str, requests: list[Request]) -> list[NormalAttempt | Exception]:
        if code in self._sold_out:
            return await self._after_sell_out(code, requests)
        self._holders.pop(code, None)  # the entry lapsed: the copy goes with it
        attempts = await self._take(code, requests)
        if any(isinstance(a, NormalAttempt) and a.outcome == "OUT_OF_STOCK" for a in attempts):
            if self._sold_out.ttl > 0:
                await self._keep_holders(code)
            self._sold_out.mark(code)
        return attempts

    async def _keep_holders(self, code: str) -> None:
        """The batch's answers are decided (and written): a failed read here must not turn them into errors;
        without the copy the crowd's batches read their order ids."""
        try:
            async with released_in_background(self.pool) as conn:
                rows = await conn.fetch(QUERIES.redemptions_of_voucher, code, HOLDERS_KEPT + 1)
        except Exception:
            return
        if len(rows) <= HOLDERS_KEPT:
            self._holders[code] = _by_order(rows)

    async def _after_sell_out(self, code: str, requests: list[Request]) -> list[NormalAttempt | Exception]:
        """OUT_OF_STOCK, but for an order that holds a redemption: EXISTS, the handler answers as a retry."""
        found = self._holders.get(code)
        if found is None:  # more redemptions than the process keeps: read the batch's orders
            async with released_in_background(self.pool) as conn:
                found = _by_order(await conn.fetch(QUERIES.redemptions_of, [r.order_id for r in requests]))
        return [NormalAttempt("EXISTS", found[r.order_id]) if r.order_id in found else SOLD_OUT
                for r in requests]

    async def _take(self, code: str, requests: list[Request]) -> list[NormalAttempt | Exception]:
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


def _by_order(rows: list[asyncpg.Record]) -> dict[str, Redemption]:
    return {row["order_id"]: Redemption(row["voucher_code"], row["customer_id"], row["order_id"],
                                        row["order_amount"], row["status"]) for row in rows}


HOLDERS_KEPT = 50_000  # redemptions of a sold-out voucher a process keeps (about 20 MB at most)
RESERVED = NormalAttempt("RESERVED")
SOLD_OUT = NormalAttempt("OUT_OF_STOCK")
