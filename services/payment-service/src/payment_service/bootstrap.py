"""The one composition root: settings -> pool, HTTP clients, unit of work, handlers' dependencies."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
from ticketing.db import create_pool

from payment_service.adapters.gateway import HttpGateway
from payment_service.adapters.hold_directory import HttpHoldDirectory
from payment_service.adapters.http import ServiceClient
from payment_service.adapters.vouchers import HttpVouchers
from payment_service.config import Settings
from payment_service.service_layer.checkout import CheckoutDeps
from payment_service.service_layer.ports import Gateway, HoldDirectory, Vouchers
from payment_service.service_layer.unit_of_work import UnitOfWork


@dataclass
class Container:
    settings: Settings
    pool: asyncpg.Pool
    uow: UnitOfWork
    holds: HoldDirectory
    vouchers: Vouchers
    gateway: Gateway
    clients: list[ServiceClient]

    def checkout_deps(self) -> CheckoutDeps:
        return CheckoutDeps(uow=self.uow, holds=self.holds, vouchers=self.vouchers, gateway=self.gateway,
                            callback_url=self.settings.public_callback_url,
                            session_ttl_seconds=self.settings.payment_session_ttl_seconds,
                            exit_after_gateway_call=self.settings.fault_exit_after_gateway_call)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        await self.pool.close()


async def bootstrap(settings: Settings, *, holds: HoldDirectory | None = None,
                    vouchers: Vouchers | None = None, gateway: Gateway | None = None) -> Container:
    """Real adapters by default; tests pass fakes for the ports they replace."""
    pool = await create_pool(settings.database_url, min_size=settings.db_pool_min,
                             max_size=settings.db_pool_max)
    timeout = settings.dependency_timeout_seconds
    hold_client = ServiceClient(settings.hold_service_url, jwt_secret=settings.jwt_secret, timeout=timeout,
                                name="hold-service")
    voucher_client = ServiceClient(settings.voucher_service_url, jwt_secret=settings.jwt_secret,
                                   timeout=timeout, name="voucher-service")
    gateway_client = ServiceClient(settings.gateway_url, jwt_secret=None, timeout=timeout * 2, name="gateway")
    return Container(settings=settings, pool=pool, uow=UnitOfWork(pool),
                     holds=holds or HttpHoldDirectory(hold_client),
                     vouchers=vouchers or HttpVouchers(voucher_client),
                     gateway=gateway or HttpGateway(gateway_client),
                     clients=[hold_client, voucher_client, gateway_client])
