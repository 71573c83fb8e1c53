"""The worker: outbox relay, PaymentSucceeded consumer, sweeper (expired holds, what cancelled showtimes left),
housekeeping, rooms (closing the automatic waiting rooms whose rush is over).

    python -m hold_service.entrypoints.worker [--roles relay,consumer,sweeper,housekeeping,rooms]
"""

from __future__ import annotations

import uvloop
from ticketing import tracing
from ticketing.logs import configure_logging
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing.runtime import Role, periodic, roles_from_argv, run_until_stopped

from hold_service.bootstrap import bootstrap
from hold_service.config import HoldSettings
from hold_service.entrypoints.consumer import payment_consumer
from hold_service.service_layer.cancellations import finish_cancelled_showtimes
from hold_service.service_layer.lifecycle import sweep_expired
from hold_service.service_layer.ports import Deps
from hold_service.service_layer.room_rush import watch_rooms
from hold_service.service_layer.showtimes import adopt_currency

ALL_ROLES = ("relay", "consumer", "sweeper", "housekeeping", "rooms")
HOUSEKEEPING_SECONDS = 3600.0


async def sweep(deps: Deps) -> None:
    """Expired holds ended, the holds and bookings a cancelled showtime still has, and a currency for the
    showtimes created without one."""
    await sweep_expired(deps)
    await finish_cancelled_showtimes(deps)
    await adopt_currency(deps)


async def purge_keys(deps: Deps) -> None:
    async with deps.uow() as uow:
        await uow.keys.purge(deps.settings.idempotency_retention_hours)
        await uow.commit()


async def main(roles: list[str]) -> None:
    settings = HoldSettings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)
    service = await bootstrap(settings)
    deps = service.deps
    available: dict[str, Role] = {
        "relay": OutboxRelay(RelayConfig(service=settings.service_name, dsn=settings.session_database_url,
                                         bootstrap=settings.kafka_bootstrap_servers)).run,
        "consumer": payment_consumer(settings, service.pool, deps).run,
        "sweeper": periodic("sweeper", settings.sweep_interval_seconds, lambda: sweep(deps),
                            service=settings.service_name),
        "housekeeping": periodic("idempotency-purge", HOUSEKEEPING_SECONDS, lambda: purge_keys(deps),
                                 service=settings.service_name),
        "rooms": periodic("waiting-room-watch", settings.waiting_room_auto_check_seconds, lambda: watch_rooms(deps),
                          service=settings.service_name),
    }
    service.number_seat_changes()  # whatever its roles: the consumer and the sweeper change seat maps
    try:
        await run_until_stopped({name: available[name] for name in roles}, service=settings.service_name,
                                metrics_port=settings.metrics_port,
                                metrics_host=settings.metrics_host)
    finally:
        await service.close()


def cli() -> None:
    uvloop.run(main(roles_from_argv(ALL_ROLES, __doc__)))


if __name__ == "__main__":
    cli()
