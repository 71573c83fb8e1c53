"""`python -m payment_service.entrypoints.worker [--roles relay,consumer,reconcile,housekeeping]`.

Locally one process runs every role; in Kubernetes each role can run alone.
"""

from __future__ import annotations

from collections.abc import Callable

import uvloop
from ticketing.logs import configure_logging
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing.runtime import Role, periodic, roles_from_argv, run_until_stopped

from payment_service.bootstrap import Container, bootstrap
from payment_service.config import Settings
from payment_service.entrypoints.consumer import booking_events_consumer
from payment_service.service_layer.housekeeping import purge_expired_records
from payment_service.service_layer.reconcile import reconcile_pending

ALL_ROLES = ("relay", "consumer", "reconcile", "housekeeping")


def _roles(c: Container) -> dict[str, Callable[[], Role]]:
    s = c.settings
    return {
        "relay": lambda: OutboxRelay(RelayConfig(service=s.service_name, dsn=s.database_url,
                                                 bootstrap=s.kafka_bootstrap_servers)).run,
        "consumer": lambda: booking_events_consumer(c).run,
        "reconcile": lambda: periodic("reconcile", s.reconcile_interval_seconds,
                                      lambda: reconcile_pending(c.uow, c.gateway, s.reconcile_after_seconds)),
        "housekeeping": lambda: periodic("housekeeping", s.housekeeping_interval_seconds, lambda: purge(c)),
    }


async def purge(c: Container) -> None:
    s = c.settings
    await purge_expired_records(c.uow, events_after=s.callback_event_retention_seconds,
                                keys_after=s.idempotency_retention_seconds)


async def run(roles: list[str]) -> None:
    settings = Settings()
    configure_logging(settings.service_name, settings.log_level)
    container = await bootstrap(settings)
    try:
        factories = _roles(container)
        await run_until_stopped({name: factories[name]() for name in roles})
    finally:
        await container.close()


def main(argv: list[str] | None = None) -> None:
    uvloop.run(run(roles_from_argv(ALL_ROLES, __doc__, argv)))


if __name__ == "__main__":
    main()
