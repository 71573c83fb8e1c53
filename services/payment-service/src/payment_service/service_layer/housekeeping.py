"""Retention: callback ids kept >= 3 days (gateways retry for days), idempotency keys >= 24 h."""

from __future__ import annotations

import logging

from ticketing.logs import log_action

from payment_service.adapters.repository import QUERIES
from payment_service.service_layer.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


async def purge_expired_records(uow: UnitOfWork, *, events_after: float, keys_after: float) -> None:
    async with uow.begin() as tx:
        events = await tx.conn.execute(QUERIES.delete_events_before, events_after)
        keys = await tx.conn.execute(QUERIES.delete_keys_before, keys_after)
    log_action(logger, "housekeeping.purged", events=events, keys=keys)
