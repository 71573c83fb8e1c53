"""The one composition root: settings in, `Deps` out (tests pass fakes for the ports they replace)."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
from ticketing.db import create_pool

from payment_service.adapters.hold_directory import HttpHoldDirectory
from payment_service.adapters.http import ServiceClient, service_token
from payment_service.adapters.repository import PgPaymentsUnitOfWork
from payment_service.adapters.stripe_provider import StripeGateway
from payment_service.adapters.vouchers import HttpVouchers
from payment_service.config import Settings
from payment_service.service_layer.ports import Deps, Gateway, HoldDirectory, Vouchers


@dataclass
class Service:
    """The wired service: its `Deps`, and the connections the process closes at the end."""

    deps: Deps
    pool: asyncpg.Pool
    clients: list[ServiceClient]

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        await self.pool.close()


def provider(settings: Settings, timeout: float) -> Gateway:
    """The payment provider's adapter that PAYMENT_PROVIDER names (one today: Stripe Checkout)."""
    if settings.payment_provider == "stripe":
        return StripeGateway(settings, timeout=timeout)
    raise ValueError(f"unknown PAYMENT_PROVIDER {settings.payment_provider!r}")


async def bootstrap(settings: Settings, *, holds: HoldDirectory | None = None, vouchers: Vouchers | None = None,
                    gateway: Gateway | None = None) -> Service:
    """Real adapters by default; tests pass fakes for the ports they replace."""
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max,
                             statement_cache_size=settings.db_statement_cache_size)
    timeout = settings.dependency_timeout_seconds
    ours = service_token(settings.jwt_secret)
    hold_client = ServiceClient(settings.hold_service_url, credentials=ours, timeout=timeout, name="hold-service")
    voucher_client = ServiceClient(settings.voucher_service_url, credentials=ours, timeout=timeout,
                                   name="voucher-service")
    deps = Deps(settings=settings, uow=lambda: PgPaymentsUnitOfWork(pool),
                statements=lambda: PgPaymentsUnitOfWork(pool, transaction=False),
                holds=holds or HttpHoldDirectory(hold_client), vouchers=vouchers or HttpVouchers(voucher_client),
                gateway=gateway or provider(settings, timeout * 2))
    return Service(deps=deps, pool=pool, clients=[hold_client, voucher_client])
