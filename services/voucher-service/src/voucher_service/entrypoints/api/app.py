"""`get_application()`: the FastAPI factory uvicorn runs (--factory)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from ticketing import tracing
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.api.limiter import Priority
from ticketing.api.shedding import ShedRoute
from ticketing.kafka import KafkaProbe
from ticketing.logs import configure_logging
from ticketing.redis_client import redis_ready
from ticketing.tokens import TokenVerifier

from voucher_service.adapters.publisher import KafkaPublisher
from voucher_service.bootstrap import bootstrap
from voucher_service.config import VoucherSettings
from voucher_service.entrypoints.api.routes import admin, quotes, reservations

# What this process sheds first at its limit of work in flight (ticketing.api.shedding): a reservation, its
# confirmation and its release are part of a checkout (payment-service calls them): shed last.
SHED_ROUTES = [ShedRoute("POST", reservations.RESERVE_PATH, Priority.PAY),
               ShedRoute("POST", reservations.CONFIRM_PATH, Priority.PAY),
               ShedRoute("DELETE", reservations.RELEASE_PATH, Priority.PAY),
               ShedRoute("GET", quotes.QUOTE_PATH, Priority.BROWSE)]


def get_application(settings: VoucherSettings | None = None) -> FastAPI:
    settings = settings or VoucherSettings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await bootstrap(settings)
        app.state.service, app.state.deps = service, service.deps
        kafka = KafkaProbe(settings.kafka_bootstrap_servers)
        app.state.readiness_checks = {
            "postgres": lambda: service.pool.fetchval("SELECT 1"),
            "redis": lambda: redis_ready(service.redis),
            "kafka": lambda: _kafka_ready(kafka, service.publisher),
        }
        try:
            yield
        finally:
            await kafka.close()
            await service.close()

    return build_app(title="voucher-service", tokens=TokenVerifier.from_settings(settings),
                     access_log=settings.access_log, max_header_bytes=settings.max_header_bytes,
                     max_body_bytes=settings.max_body_bytes,
                     routers=[reservations.router, quotes.router, admin.router], lifespan=lifespan,
                     load=settings, shed_routes=SHED_ROUTES,
                     hot_routes=[HotRoute("POST", reservations.RESERVE_PATH, reservations.reserve)])


async def _kafka_ready(probe: KafkaProbe, publisher: KafkaPublisher | None) -> None:
    await probe()
    if publisher is not None and not publisher.ready:  # reachable again, producer not reconnected yet
        raise ConnectionError("the flash-sale producer is not connected yet")
