"""The leader's loop over batches: the next batch is claimed while the broker answers this one.

Each pass sends a batch and, while the broker acknowledges it, claims the next one with the same statement
that marks the batch before (sql claim_batch: one round trip, and Postgres works while Kafka does). The
next batch starts after the last id in flight, since that statement cannot see its own marks. It goes out
only if the batch in flight was acknowledged row for row (`BatchOutcome.clean`): after a refusal, a failure
or a deferred row it is dropped unsent, the batch in flight is settled on its own, and the next claim reads
every row in line again, so no row overtakes an earlier one of its key. Claims bounded below by an id miss
a row a long transaction commits late with a lower id, so a claim reads every row in line again at least
every poll interval, and after every pass that left the relay idle.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import asyncpg

from ticketing.relay import batches
from ticketing.relay.housekeeping import Housekeeping


class RelayBatchError(Exception):
    """The broker did not acknowledge the whole batch."""


class BatchSettings(Protocol):
    @property
    def service(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def poll_interval(self) -> float: ...


class Leader(Protocol):
    """What the pump needs of the leading relay (`leadership.OutboxRelay`), declared here so that the pump
    never imports the module that calls it."""

    @property
    def config(self) -> BatchSettings: ...
    @property
    def housekeeping(self) -> Housekeeping: ...

    async def send_batch(self, producer: object, rows: list[asyncpg.Record]) -> batches.BatchOutcome: ...
    def expect_work(self) -> None: ...
    async def wait_for_work(self, stop: asyncio.Event) -> None: ...


async def pump(relay: Leader, conn: asyncpg.Connection, producer: object, stop: asyncio.Event) -> None:
    """Batches until stopped or until the producer must be renewed; RelayBatchError after a failed batch."""
    size, service, loop = relay.config.batch_size, relay.config.service, asyncio.get_running_loop()
    marks: list[int] = []  # acknowledged rows of the batch before, not marked yet
    relay.expect_work()
    rows = await batches.claim(conn, service, size)
    reread_by = loop.time() + relay.config.poll_interval
    while not stop.is_set():
        if not rows:
            await batches.mark(conn, service, marks, [])
            marks = []
            await relay.housekeeping.run(conn, idle=True)
            await relay.wait_for_work(stop)
        else:
            ahead_wanted = len(rows) == size and loop.time() < reread_by
            outcome, ahead = await _in_flight(relay, conn, producer, rows, marks if ahead_wanted else None)
            if ahead is not None:
                marks = []  # marked by the claim
                if outcome.clean:
                    marks, rows = outcome.published, ahead
                    continue
            await _settle(conn, service, marks, outcome)
            marks = []
            if outcome.renew_producer:
                return
            await relay.housekeeping.run(conn, idle=False)
            if outcome.claimed < size and not outcome.deferred:
                await relay.wait_for_work(stop)
        relay.expect_work()
        rows = await batches.claim(conn, service, size)
        reread_by = loop.time() + relay.config.poll_interval
    await batches.mark(conn, service, marks, [])


async def _in_flight(relay: Leader, conn: asyncpg.Connection, producer: object, rows: list[asyncpg.Record],
                     marking: list[int] | None) -> tuple[batches.BatchOutcome, list[asyncpg.Record] | None]:
    """Send the batch; while the broker answers, claim the next one with the statement that marks `marking`
    (None: no claim ahead, `marking` stays unmarked)."""
    sending = asyncio.ensure_future(relay.send_batch(producer, rows))
    try:
        ahead = None
        if marking is not None:
            ahead = await batches.claim(conn, relay.config.service, relay.config.batch_size,
                                        after=rows[-1]["id"], marking=marking)
        return await sending, ahead
    finally:
        sending.cancel()  # a no-op once done; else the claim failed and the connection is gone


async def _settle(conn: asyncpg.Connection, service: str, marks: list[int], outcome: batches.BatchOutcome) -> None:
    """The batch on its own: its acknowledged rows (and `marks`) marked, its refused rows set aside;
    RelayBatchError if it stopped at a failure."""
    await batches.mark(conn, service, marks + outcome.published, outcome.quarantined)
    if outcome.failure is not None:
        raise RelayBatchError(f"{len(outcome.published)}/{outcome.claimed} acknowledged: "
                              f"{outcome.failure!r}") from outcome.failure
