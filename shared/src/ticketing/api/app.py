"""The FastAPI application factory every service uses (`get_application()` in each service)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

from fastapi import APIRouter, FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.types import ASGIApp

from ticketing.api.body_limit import BodyLimit
from ticketing.api.boundary import Boundary
from ticketing.api.errors import install_error_handlers
from ticketing.api.health import router as health_router
from ticketing.api.hot_path import HotPaths, HotRoute
from ticketing.api.openapi import describe_errors
from ticketing.api.server import HeadLimitedHttpTools
from ticketing.api.telemetry import RequestTelemetry
from ticketing.metrics import ROLE_UP
from ticketing.tokens import TokenVerifier

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
NO_OTEL: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


class ServiceApp(FastAPI):
    """FastAPI with the Boundary (boundary.py) outside its whole stack, ServerErrorMiddleware included."""

    max_header_bytes = 16384

    def build_middleware_stack(self) -> ASGIApp:
        return Boundary(super().build_middleware_stack(), self.max_header_bytes)


def build_app(*, title: str, tokens: TokenVerifier | None, routers: list[APIRouter], max_body_bytes: int,
              max_header_bytes: int = 16384, lifespan: Lifespan | None = None, version: str = "1.0.0",
              hot_routes: list[HotRoute] | None = None, access_log: bool = True) -> FastAPI:
    """`tokens`: what checks bearer tokens (security.py; None: a service whose routes need none).
    `hot_routes`: endpoints served ahead of FastAPI's routing (why: hot_path.py); keep them in `routers`.
    `max_body_bytes`: the settings' MAX_BODY_BYTES; a larger body gets 413 before it is read (body_limit.py).
    `max_header_bytes`: MAX_HEADER_BYTES; a larger head gets 431 (boundary.py, and server.py as it is read)."""
    # Metrics are Prometheus (/metrics); we set up no OpenTelemetry. FastAPI's native telemetry would
    # still look up the global OTel providers on every request, a cost on every request under load.
    app = ServiceApp(title=title, version=version, lifespan=frozen_after_startup(lifespan), telemetry=NO_OTEL)
    app.max_header_bytes = HeadLimitedHttpTools.max_head_bytes = max_header_bytes
    app.state.tokens = tokens
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


def frozen_after_startup(lifespan: Lifespan | None) -> Lifespan:
    """`lifespan`, then the garbage collector freezes what the process holds once started (gc.freeze).

    Python's full collection walks every object it tracks: the imported code, the framework's routes and
    models, the pools. The event loop answers nothing while it walks, and under load that happens a few
    times a minute (figures: docs/benchmarks.md). Those objects live as long as the process, so no
    collection frees them; frozen, they are no longer walked, and a full collection walks only what came
    after startup.
    """
    @asynccontextmanager
    async def run(app: FastAPI) -> AsyncIterator[None]:
        async with lifespan(app) if lifespan is not None else nullcontext():
            gc.freeze()
            try:
                yield
            finally:
                gc.unfreeze()  # a process that goes on after its app (a test run) can free them again
    return run
