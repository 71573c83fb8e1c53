"""The composition root: settings -> pool, signer, mailer, the idempotent record processor."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from email.utils import parseaddr
from typing import Any

import asyncpg
from ticketing.consumer import ConsumerConfig, IdempotentConsumer
from ticketing.db import create_pool
from ticketing.events import BOOKING_EVENTS, decode_booking_event
from ticketing.inbox import Handler

from notifier.adapters.email_queue import pg_transactions
from notifier.adapters.mailer import Mailer, SmtpMailer
from notifier.adapters.repository import PgNotifierRepository
from notifier.config import NotifierSettings
from notifier.domain.tickets import private_key_from_seed
from notifier.service_layer import handlers
from notifier.service_layer.handlers import NotifyPolicy
from notifier.service_layer.sender import SenderLoop


def _handlers(policy: NotifyPolicy) -> dict[str, Handler]:
    def bind(fn: Any) -> Handler:
        async def handle(conn: asyncpg.Connection, event: Any) -> None:
            await fn(event, PgNotifierRepository(conn), policy)
        return handle
    return {"BookingConfirmed": bind(handlers.notify_booking_confirmed),
            "RefundIssued": bind(handlers.notify_refund_issued),
            "BookingFailed": bind(handlers.notify_booking_failed)}


@dataclass
class Notifier:
    settings: NotifierSettings
    policy: NotifyPolicy
    mailer: Mailer
    pool: asyncpg.Pool | None = None
    # The shared consumer's per-record logic (inbox + effect in one transaction, transient retries, DLQ),
    # driven by faust instead of its own aiokafka loop.
    processor: IdempotentConsumer | None = None
    wake_sender: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> None:
        s = self.settings
        self.pool = await create_pool(s.database_url, min_size=1, max_size=s.db_pool_max)
        self.processor = IdempotentConsumer(ConsumerConfig(
            name=s.consumer_name, topics=[BOOKING_EVENTS], bootstrap=s.kafka_bootstrap_servers,
            decode=decode_booking_event, handlers=_handlers(self.policy)), self.pool)
        await self.processor.open()

    def sender_loop(self) -> SenderLoop:
        s = self.settings
        assert self.pool is not None, "start() first"
        return SenderLoop(pg_transactions(self.pool), self.mailer, s.retry_policy, s.sender_batch_size,
                          s.sender_interval_seconds, self.wake_sender)

    async def stop(self) -> None:
        if self.processor is not None:
            await self.processor.close()
        if self.pool is not None:
            await self.pool.close()


def notify_policy(s: NotifierSettings) -> NotifyPolicy:
    return NotifyPolicy(mail_from=s.mail_from, signing_key=private_key_from_seed(s.qr_signing_key),
                        cents_per_point=s.points_per_cents)


def bootstrap(settings: NotifierSettings | None = None, mailer: Mailer | None = None) -> Notifier:
    s = settings or NotifierSettings()
    policy = notify_policy(s)
    mailer = mailer or SmtpMailer(s.smtp_host, s.smtp_port, parseaddr(s.mail_from)[1], s.smtp_timeout_seconds)
    return Notifier(settings=s, policy=policy, mailer=mailer)
