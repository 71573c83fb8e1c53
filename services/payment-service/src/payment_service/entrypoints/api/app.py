"""`uvicorn --factory payment_service.entrypoints.api.app:get_application`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from ticketing import tracing
from ticketing.api.app import build_app
from ticketing.api.limiter import Priority
from ticketing.api.shedding import ShedRoute
from ticketing.kafka import kafka_readiness
from ticketing.logs import configure_logging
from ticketing.tokens import TokenVerifier

from payment_service.bootstrap import bootstrap
from payment_service.config import Settings
from payment_service.entrypoints.api.routes import callback, checkout

# What this process sheds first at its limit of work in flight (ticketing.api.shedding): the payment path last.
# A callback refused is sent again by the provider, but only minutes later: a customer who paid waits for it.
SHED_ROUTES = [ShedRoute("POST", callback.CALLBACK_PATH, Priority.PAY),
               ShedRoute("POST", checkout.CHECKOUT_PATH, Priority.PAY),
               ShedRoute("GET", checkout.PAYMENT_PATH, Priority.BROWSE)]  # the page polls it


def get_application(settings: Settings | None = None, **ports: Any) -> FastAPI:
    """`ports` (holds=, vouchers=, gateway=) replace real adapters in tests."""
    settings = settings or Settings()
    configure_logging(settings.service_name, settings.log_level)
    tracing.configure(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = await bootstrap(settings, **ports)
        app.state.service, app.state.deps = service, service.deps

        async def postgres() -> None:
            await service.pool.fetchval("SELECT 1")

        kafka = kafka_readiness(settings.kafka_bootstrap_servers)
        app.state.readiness_checks = {"postgres": postgres, "kafka": kafka}
        try:
            yield
        finally:
            await kafka.close()
            await service.close()

    # A provider's subject gets its customer id from hold-service (CUSTOMER_IDS_URL, else HOLD_SERVICE_URL).
    tokens = TokenVerifier.from_settings(settings.model_copy(
        update={"customer_ids_url": settings.customer_ids_url or settings.hold_service_url}))
    app = build_app(title="payment-service", tokens=tokens,
                    access_log=settings.access_log, max_header_bytes=settings.max_header_bytes,
                    max_body_bytes=settings.max_body_bytes, routers=[checkout.router, callback.router],
                    lifespan=lifespan, load=settings, shed_routes=SHED_ROUTES)
    if origins := [o.strip() for o in settings.cors_allowed_origins.split(",") if o.strip()]:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"],
                           allow_headers=["authorization", "content-type", "idempotency-key", "x-request-id"],
                           expose_headers=["x-request-id"], max_age=600)
    return app
