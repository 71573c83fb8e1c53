"""`get_application()`: the hold-service HTTP API (uvicorn --factory)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from ticketing import tracing
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.api.limiter import Priority
from ticketing.api.shedding import ShedRoute
from ticketing.kafka import kafka_readiness
from ticketing.logs import configure_logging
from ticketing.redis_client import redis_ready
from ticketing.tokens import TokenVerifier

from hold_service.adapters.identities import PgCustomerIds
from hold_service.bootstrap import bootstrap
from hold_service.config import HoldSettings
from hold_service.entrypoints.api.client_address import ClientAddress
from hold_service.entrypoints.api.routes import (
    cancellations,
    catalogue,
    door,
    holds,
    identities,
    pages,
    showtimes,
    waiting_room,
)
from hold_service.entrypoints.api.seat_map_stream import end_streams_on_signal, quiet_dropped_streams


def get_application(settings: HoldSettings | None = None) -> FastAPI:
    settings = settings or HoldSettings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)
    quiet_dropped_streams()
    return build_app(title="hold-service", tokens=TokenVerifier.from_settings(settings),
                     access_log=settings.access_log, max_header_bytes=settings.max_header_bytes,
                     max_body_bytes=settings.max_body_bytes,
                     routers=[catalogue.router, showtimes.router, holds.router, cancellations.router,
                              waiting_room.router, door.router, identities.router, pages.router],
                     lifespan=_lifespan(settings), hot_routes=HOT_ROUTES, load=settings, shed_routes=SHED_ROUTES)


# Served ahead of FastAPI's routing (ticketing.api.hot_path): the requests a sale sends most.
HOT_ROUTES = [HotRoute("POST", holds.CREATE_HOLD_PATH, holds.create_hold),
              HotRoute("GET", showtimes.SEAT_MAP_PATH, showtimes.seat_map),
              HotRoute("GET", catalogue.CATALOGUE_PATH, catalogue.list_showtimes),
              HotRoute("GET", showtimes.SEAT_MAP_STREAM_PATH, showtimes.seat_map_stream),
              HotRoute("GET", waiting_room.POLL_PATH, waiting_room.queue_position),
              HotRoute("POST", waiting_room.JOIN_PATH, waiting_room.join_queue)]

# What this process sheds first at its limit of work in flight (ticketing.api.shedding): the reads a customer
# repeats, then holds; the payment path last (the rest: HOLD). A seat map the process holds in memory is served
# whatever the load: it costs less than the 503.
SHED_ROUTES = [
    ShedRoute("GET", showtimes.SEAT_MAP_PATH, Priority.BROWSE, from_memory=showtimes.seat_map_in_memory),
    ShedRoute("GET", catalogue.CATALOGUE_PATH, Priority.BROWSE),
    ShedRoute("GET", waiting_room.POLL_PATH, Priority.BROWSE),
    ShedRoute("GET", waiting_room.STATUS_PATH, Priority.BROWSE),
    ShedRoute("GET", "/bookings", Priority.BROWSE),
    # The pages are files in memory: served at any load.
    *(ShedRoute("GET", path, Priority.BROWSE, from_memory=pages.in_memory) for path in pages.PATHS),
    # Streams last minutes: counted, one would hold a slot for as long; they have limits of their own
    # (SEAT_MAP_MAX_STREAMS_PER_ADDRESS, and per process).
    ShedRoute("GET", showtimes.SEAT_MAP_STREAM_PATH, Priority.NEVER),
    ShedRoute("POST", holds.CREATE_HOLD_PATH, Priority.HOLD),
    ShedRoute("POST", waiting_room.JOIN_PATH, Priority.HOLD),
    # A checkout (payment-service) reads the hold and extends it: part of the payment path.
    ShedRoute("GET", holds.HOLD_PATH, Priority.PAY),
    ShedRoute("POST", holds.EXTEND_PATH, Priority.PAY),
    # Releasing a hold gives its seats back to the crowd: refusing it keeps them taken for the hold's whole time.
    ShedRoute("DELETE", holds.HOLD_PATH, Priority.PAY),
    ShedRoute("POST", "/checkins", Priority.PAY),  # customers at the door of a showtime about to start
    ShedRoute("POST", "/checkins/batch", Priority.PAY),
]


def _lifespan(settings: HoldSettings) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await bootstrap(settings)
        app.state.service, app.state.deps = service, service.deps
        # A provider's subject gets its customer id here, at its first sign-in (docs/sign-in.md).
        app.state.identities = app.state.tokens.customer_ids = PgCustomerIds(service.pool)
        kafka = kafka_readiness(settings.kafka_bootstrap_servers)
        app.state.client_address = ClientAddress(settings.trusted_proxies)  # for the per-address limit
        app.state.readiness_checks = {"postgres": lambda: service.pool.fetchval("SELECT 1"),
                                      "redis": lambda: redis_ready(service.redis), "kafka": kafka}
        # The seat map: this process' LISTEN and its streams, closed on SIGTERM before uvicorn waits for them.
        await service.follow_seat_changes()
        service.number_seat_changes()
        restore_signals = end_streams_on_signal(service.seat_maps.close_streams)
        try:
            yield
        finally:
            restore_signals()
            await kafka.close()
            await service.close()
    return lifespan
