"""Retention: callback ids kept >= 3 days (gateways retry for days), idempotency keys >= 24 h."""

from __future__ import annotations

import logging

from ticketing.logs import log_action

from payment_service.service_layer.ports import Deps

logger = logging.getLogger(__name__)


async def purge_expired_records(deps: Deps) -> None:
    s = deps.settings
    async with deps.uow() as uow:
        events, keys = await uow.payments.purge(s.callback_event_retention_seconds, s.idempotency_retention_seconds)
        await uow.commit()
    log_action(logger, "housekeeping.purged", events=events, keys=keys)
