"""The leading relay's housekeeping: the backlog, lag and quarantine gauges, and the outbox retention."""

from __future__ import annotations

import time

import asyncpg

from ticketing.job_metrics import JobWatch
from ticketing.metrics import OUTBOX_BACKLOG, OUTBOX_LAG_SECONDS, OUTBOX_QUARANTINED_ROWS
from ticketing.outbox import QUERIES

RETENTION_EVERY_SECONDS = 600.0
PUBLISHED_RETENTION_SECONDS = 86400.0


class Housekeeping:
    """The gauges are refreshed after every pass that left the relay idle, and at most every
    `refresh_seconds` while it drains a backlog (the count reads every row in line, so once per batch it
    would cost a backlog's drain time quadratic in its length)."""

    def __init__(self, service: str, refresh_seconds: float) -> None:
        self.service, self.refresh_seconds = service, refresh_seconds
        self._refreshed = self._retained = float("-inf")
        # The outbox retention, a periodic job of the leading relay (a standby reports its start).
        self._retention = JobWatch(service, "outbox-retention", RETENTION_EVERY_SECONDS)

    async def run(self, conn: asyncpg.Connection, *, idle: bool) -> None:
        now = time.monotonic()
        if idle or now - self._refreshed >= self.refresh_seconds:
            self._refreshed = now
            await self._refresh(conn)
        if now - self._retained >= RETENTION_EVERY_SECONDS:
            self._retained = now
            try:
                await conn.execute(QUERIES.delete_published_before, PUBLISHED_RETENTION_SECONDS)
            except Exception:
                self._retention.failed()
                raise
            self._retention.succeeded()

    async def _refresh(self, conn: asyncpg.Connection) -> None:
        counts = await conn.fetchrow(QUERIES.unpublished_count)
        assert counts is not None  # an aggregate always returns its row
        oldest = counts["oldest"]
        lag = 0.0 if oldest is None else max(0.0, time.time() - oldest.timestamp())
        OUTBOX_LAG_SECONDS.labels(self.service).set(lag)
        OUTBOX_BACKLOG.labels(self.service).set(counts["n"])
        OUTBOX_QUARANTINED_ROWS.labels(self.service).set(counts["quarantined"])
