"""booking-events -> the handlers, each inside the idempotent consumer's transaction beside its inbox row.

The shared consumer's per-record logic (inbox + effect in one transaction, transient retries, DLQ), driven
by the faust agent instead of its own aiokafka loop.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.events import BOOKING_EVENTS, decode_booking_event
from ticketing.inbox import Handler

from notifier.service_layer import handlers
from notifier.service_layer.ports import Deps


def booking_events_processor(deps: Deps, pool: asyncpg.Pool) -> IdempotentConsumer:
    def joined(react: Any) -> Handler:
        async def handle(conn: asyncpg.Connection, event: Any) -> None:
            uow = deps.uow().joined(conn)
            uow.contacts = deps.contacts
            await react(event, uow, deps.policy)
        return handle

    s = deps.settings
    return IdempotentConsumer(ConsumerConfig(
        name=s.consumer_name, topics=[BOOKING_EVENTS], bootstrap=s.kafka_bootstrap_servers,
        decode=decode_booking_event,
        handlers={"BookingConfirmed": joined(handlers.notify_booking_confirmed),
                  "RefundIssued": joined(handlers.notify_refund_issued),
                  "BookingCancelled": joined(handlers.notify_booking_cancelled),
                  "BookingFailed": joined(handlers.notify_booking_failed)}), pool)
