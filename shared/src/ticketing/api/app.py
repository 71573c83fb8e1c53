"""The FastAPI application factory every service uses (`get_application()` in each service)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import APIRouter, FastAPI
from fastapi.telemetry import TelemetryConfig

from ticketing.api.body_limit import BodyLimit
from ticketing.api.errors import install_error_handlers
from ticketing.api.health import router as health_router
from ticketing.api.hot_path import HotPaths, HotRoute
from ticketing.api.openapi import describe_errors
from ticketing.api.telemetry import RequestTelemetry
from ticketing.metrics import ROLE_UP

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
NO_OTEL: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


def build_app(*, title: str, jwt_secret: str, routers: list[APIRouter], max_body_bytes: int,
              lifespan: Lifespan | None = None, version: str = "1.0.0",
              hot_routes: list[HotRoute] | None = None, access_log: bool = True) -> FastAPI:
    """`hot_routes`: endpoints served ahead of FastAPI's routing (why: hot_path.py); keep them in `routers`.
    `max_body_bytes`: the settings' MAX_BODY_BYTES; a larger body gets 413 before it is read (body_limit.py)."""
    # Metrics are Prometheus (/metrics); we set up no OpenTelemetry. FastAPI's native telemetry would
    # still look up the global OTel providers on every request, a cost on every request under load.
    app = FastAPI(title=title, version=version, lifespan=lifespan, telemetry=NO_OTEL)
    app.state.jwt_secret = jwt_secret
    app.state.readiness_checks = {}
    ROLE_UP.labels(title, "api").set(1)  # an alert fires when no instance of a role reports
    install_error_handlers(app)
    app.include_router(health_router)
    for router in routers:
        app.include_router(router)
    if hot_routes:
        app.add_middleware(HotPaths, routes=hot_routes)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)  # outside HotPaths too
    # Outermost: it sees every answer, the 413s included.
    app.add_middleware(RequestTelemetry, service=title, access_log=access_log)
    describe_errors(app)
    return app


