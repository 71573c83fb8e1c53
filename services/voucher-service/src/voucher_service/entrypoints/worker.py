"""The worker: consumers and periodic jobs in one process; `--roles` picks a subset.

    python -m voucher_service.entrypoints.worker [--roles reserved-consumer,booking-consumer,expiry,reconcile]
"""

from __future__ import annotations

import uvloop
from ticketing import tracing
from ticketing.logs import configure_logging
from ticketing.runtime import Role, periodic, roles_from_argv, run_until_stopped

from voucher_service.bootstrap import Service, bootstrap
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.consumer import booking_events_consumer, voucher_reserved_consumer
from voucher_service.service_layer import expiry, jobs
from voucher_service.service_layer.warmup import warm_selling_vouchers

ALL_ROLES = ("reserved-consumer", "booking-consumer", "expiry", "reconcile")


def build_roles(service: Service, names: list[str]) -> dict[str, Role]:
    s, deps = service.settings, service.deps
    available: dict[str, Role] = {
        "reserved-consumer": voucher_reserved_consumer(s, service.pool, deps).run,
        "booking-consumer": booking_events_consumer(s, service.pool, deps).run,
        "expiry": periodic("voucher-expiry", s.sweep_interval_seconds, lambda: expiry.expire_reservations(deps),
                           service=s.service_name),
        "reconcile": periodic("voucher-reconcile", s.reconcile_interval_seconds, lambda: jobs.reconcile_all(deps),
                              service=s.service_name),
    }
    return {name: available[name] for name in names}


async def main(names: list[str]) -> None:
    settings = VoucherSettings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)
    service = await bootstrap(settings, with_producer=False)
    try:
        await warm_selling_vouchers(service.deps)
        await run_until_stopped(build_roles(service, names), service=settings.service_name,
                                metrics_port=settings.metrics_port,
                                metrics_host=settings.metrics_host)
    finally:
        await service.close()


def cli() -> None:
    uvloop.run(main(roles_from_argv(ALL_ROLES, __doc__)))


if __name__ == "__main__":
    cli()
