"""`python -m payment_service.entrypoints.worker [--roles relay,consumer,reconcile,housekeeping]`.

Locally one process runs every role; in Kubernetes each role can run alone. `reconcile` is the money
reconciler (service_layer/money.py): pending payments, refunds, and the report of unresolved money.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import uvloop
from ticketing import tracing
from ticketing.logs import configure_logging
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing.runtime import Role, periodic, roles_from_argv, run_until_stopped

from payment_service.bootstrap import Service, bootstrap
from payment_service.config import Settings
from payment_service.entrypoints.consumer import booking_events_consumer
from payment_service.service_layer import money
from payment_service.service_layer.housekeeping import purge_expired_records

ALL_ROLES = ("relay", "consumer", "reconcile", "housekeeping")


def _roles(service: Service) -> dict[str, Callable[[], Role]]:
    deps, s = service.deps, service.deps.settings
    return {
        "relay": lambda: OutboxRelay(RelayConfig(service=s.service_name, dsn=s.session_database_url,
                                                 bootstrap=s.kafka_bootstrap_servers)).run,
        "consumer": lambda: booking_events_consumer(deps, service.pool).run,
        "reconcile": lambda: _both(periodic("reconcile", s.reconcile_interval_seconds, lambda: money.reconcile(deps),
                                            service=s.service_name),
                                   periodic("refunds", s.refund_interval_seconds, lambda: money.issue_refunds(deps),
                                            service=s.service_name)),
        "housekeeping": lambda: periodic("housekeeping", s.housekeeping_interval_seconds,
                                         lambda: purge_expired_records(deps), service=s.service_name),
    }


def _both(first: Role, second: Role) -> Role:
    async def run(stop: asyncio.Event) -> None:
        await asyncio.gather(first(stop), second(stop))
    return run


async def run(roles: list[str]) -> None:
    settings = Settings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)
    service = await bootstrap(settings)
    try:
        factories = _roles(service)
        await run_until_stopped({name: factories[name]() for name in roles}, service=settings.service_name,
                                metrics_port=settings.metrics_port,
                                metrics_host=settings.metrics_host)
    finally:
        await service.close()


def main(argv: list[str] | None = None) -> None:
    uvloop.run(run(roles_from_argv(ALL_ROLES, __doc__, argv)))


if __name__ == "__main__":
    main()
