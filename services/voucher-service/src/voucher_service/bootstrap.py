"""The one composition root: settings in, `Service` out (its `Deps` and what the process closes)."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
from ticketing.db import create_pool
from ticketing.redis_client import RedisClient, redis_client

from voucher_service.adapters.gate import RedisFlashGate
from voucher_service.adapters.payments import HttpPayments
from voucher_service.adapters.publisher import KafkaPublisher, flash_producer
from voucher_service.adapters.quote_limit import RedisQuoteLimit
from voucher_service.adapters.repository import PgVouchersUnitOfWork
from voucher_service.adapters.reservations import PgNormalReservations
from voucher_service.adapters.writer_lag import KafkaWriterLag
from voucher_service.config import VoucherSettings
from voucher_service.service_layer.ports import Deps
from voucher_service.service_layer.process_state import VoucherCache


@dataclass
class Service:
    """The wired service: its `Deps`, and the connections the process closes at the end."""

    settings: VoucherSettings
    deps: Deps
    pool: asyncpg.Pool
    redis: RedisClient
    publisher: KafkaPublisher | None  # None in the worker
    writer_lag: KafkaWriterLag
    payments: HttpPayments

    async def close(self) -> None:
        if self.publisher is not None:
            await self.publisher.stop()
        await self.payments.close()
        await self.writer_lag.close()
        await self.redis.aclose()
        await self.pool.close()


async def bootstrap(settings: VoucherSettings, *, with_producer: bool = True) -> Service:
    """Open everything for the lifetime of a process (API or worker). Kafka being down does not stop it:
    the publisher connects in the background (flash reserves answer 503 until then)."""
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min,
                             max_size=settings.db_pool_max,
                             command_timeout=max(settings.dependency_timeout_seconds * 5, 10),
                             statement_cache_size=settings.db_statement_cache_size)
    # Short timeouts: a dead Redis must turn into a quick 503, not a hung request. One quick retry on a
    # dropped connection (a restarted Redis leaves stale pooled sockets): every script is idempotent per
    # order id, so a retried call cannot take a second use.
    client = redis_client(settings, settings.dependency_timeout_seconds, retry_dropped=True)
    publisher = None
    if with_producer:
        publisher = KafkaPublisher(None, settings.kafka_send_timeout_seconds, factory=lambda: flash_producer(
            settings.kafka_bootstrap_servers, settings.flash_linger_ms))
        await publisher.start()
    lag = KafkaWriterLag(settings.kafka_bootstrap_servers, settings.writer_group)
    payments = HttpPayments(settings.payment_service_url, jwt_secret=settings.jwt_secret,
                            timeout=settings.dependency_timeout_seconds)
    deps = Deps(uow=lambda: PgVouchersUnitOfWork(pool),
                gate=RedisFlashGate(client, sold_out_ttl=settings.sold_out_cache_seconds),
                reservations=PgNormalReservations(pool, settings.sold_out_cache_seconds),
                publisher=publisher, writer_lag=lag, payments=payments,
                reservation_ttl_seconds=settings.voucher_reservation_ttl_seconds,
                recovery_fence_seconds=settings.recovery_fence,
                quote_limit=RedisQuoteLimit(client, settings.voucher_quote_rate_limit_per_minute),
                cache=VoucherCache(ttl=settings.voucher_cache_seconds))
    return Service(settings, deps, pool, client, publisher, lag, payments)
