"""The worker: consumers and periodic jobs in one process; `--roles` picks a subset.

    python -m voucher_service.entrypoints.worker [--roles reserved-consumer,booking-consumer,expiry,reconcile]
"""

from __future__ import annotations

import logging

import uvloop
from ticketing.logs import configure_logging, log_action
from ticketing.runtime import Role, periodic, roles_from_argv, run_until_stopped

from voucher_service.bootstrap import Resources, resources
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.consumer import booking_events_consumer, voucher_reserved_consumer
from voucher_service.service_layer import expiry, jobs
from voucher_service.service_layer.warmup import warm_up

logger = logging.getLogger(__name__)
ALL_ROLES = ("reserved-consumer", "booking-consumer", "expiry", "reconcile")


def build_roles(res: Resources, names: list[str]) -> dict[str, Role]:
    s, ctx = res.settings, res.ctx
    available: dict[str, Role] = {
        "reserved-consumer": voucher_reserved_consumer(s, res.pool, ctx).run,
        "booking-consumer": booking_events_consumer(s, res.pool, ctx).run,
        "expiry": periodic("voucher-expiry", s.sweep_interval_seconds, lambda: expiry.expire_reservations(ctx)),
        "reconcile": periodic("voucher-reconcile", s.reconcile_interval_seconds,
                              lambda: jobs.reconcile_all(ctx)),
    }
    return {name: available[name] for name in names}


async def _warm_flash_vouchers(res: Resources) -> None:
    """Startup warm-up: every selling flash voucher the gate does not hold yet (SET NX semantics). A
    voucher whose gate Redis lost stays shut until the writer caught up: the reconcile job retries."""
    try:
        async with res.ctx.uow() as uow:
            codes = await uow.vouchers.flash_codes()
    except Exception as exc:  # a warm-up failure must not stop the worker
        log_action(logger, "voucher.startup_warmup_failed", str(exc), level=logging.WARNING)
        return
    for code in codes:
        try:
            if await res.ctx.flash_gate().remaining(code) is None:
                await warm_up(code, res.ctx)
        except Exception as exc:  # one voucher (recovering, Redis down) must not stop the others
            log_action(logger, "voucher.startup_warmup_failed", str(exc), level=logging.WARNING, code=code)


async def main(names: list[str]) -> None:
    settings = VoucherSettings()
    configure_logging(settings.service_name, settings.log_level)
    async with resources(settings, with_producer=False) as res:
        await _warm_flash_vouchers(res)
        await run_until_stopped(build_roles(res, names))


def cli() -> None:
    uvloop.run(main(roles_from_argv(ALL_ROLES, __doc__)))

if __name__ == "__main__":
    cli()
