"""The FastAPI application factory every service uses (`get_application()` in each service)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from functools import partial

from fastapi import APIRouter, FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.types import ASGIApp

from ticketing import tracing
from ticketing.api.body_limit import BodyLimit
from ticketing.api.boundary import Boundary
from ticketing.api.errors import install_error_handlers
from ticketing.api.health import router as health_router
from ticketing.api.hot_path import HotPaths, HotRoute
from ticketing.api.limiter import Limiter
from ticketing.api.openapi import describe_errors
from ticketing.api.server import HeadLimitedHttpTools
from ticketing.api.shedding import COMMON_ROUTES, LIMIT, RouteTable, Shedder, ShedRoute, sample_gauges
from ticketing.api.telemetry import RequestTelemetry
from ticketing.metrics import ROLE_UP
from ticketing.settings import ServiceSettings
from ticketing.tokens import TokenVerifier

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
NO_OTEL: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


class ServiceApp(FastAPI):
    """FastAPI with the Boundary (boundary.py) outside its whole stack, ServerErrorMiddleware included, and the
    Shedder (shedding.py) outside that: a request refused for load costs as little as a request can."""

    max_header_bytes = 16384
    shedder: Callable[[ASGIApp], ASGIApp] | None = None

    def build_middleware_stack(self) -> ASGIApp:
        stack = Boundary(super().build_middleware_stack(), self.max_header_bytes)
        # With TRACING_ENABLED, every request's server span, outermost (ticketing.tracing); off, no layer at all.
        return tracing.server_middleware(stack if self.shedder is None else self.shedder(stack))


def build_app(*, title: str, tokens: TokenVerifier | None, routers: list[APIRouter], max_body_bytes: int,
              max_header_bytes: int = 16384, lifespan: Lifespan | None = None, version: str = "1.0.0",
              hot_routes: list[HotRoute] | None = None, access_log: bool = True,
              load: ServiceSettings | None = None, shed_routes: list[ShedRoute] | None = None) -> FastAPI:
    """`tokens`: what checks bearer tokens (security.py; None: a service whose routes need none).
    `hot_routes`: endpoints served ahead of FastAPI's routing (why: hot_path.py); keep them in `routers`.
    `max_body_bytes`: the settings' MAX_BODY_BYTES; a larger body gets 413 before it is read (body_limit.py).
    `max_header_bytes`: MAX_HEADER_BYTES; a larger head gets 431 (boundary.py, and server.py as it is read).
    `load`: the settings whose SHED_* say how much work this process takes in (shedding.py; None or
    SHED_MAX_IN_FLIGHT=0: no shedding); `shed_routes`: the priority of the service's routes (the others:
    HOLD), hot or not."""
    # Metrics are Prometheus (/metrics), traces ticketing.tracing's. FastAPI's native telemetry would still
    # look up the global OTel providers on every request, a cost on every request under load.
    limiter = Limiter(load.shed_max_in_flight, load.shed_queue_timeout_ms) if load and load.shed_max_in_flight else None
    lifespan = frozen_after_startup(lifespan if limiter is None else sampling(lifespan, limiter, title))
    app = ServiceApp(title=title, version=version, lifespan=lifespan, telemetry=NO_OTEL)
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
    app.state.limiter = limiter
    if limiter is not None and load is not None:
        routes = RouteTable([*COMMON_ROUTES, *(shed_routes or [])])
        app.shedder = partial(Shedder, limiter=limiter, routes=routes, service=title,
                              retry_after_seconds=load.shed_retry_after_seconds)
    else:
        LIMIT.labels(title).set(0)
    # Outermost of these (the Boundary and the Shedder wrap them): it sees every answer, the 413s included, but
    # a shed request's 503 (ticketing_http_requests_shed_total counts those).
    app.add_middleware(RequestTelemetry, service=title, access_log=access_log)
    describe_errors(app)
    return app


def sampling(lifespan: Lifespan | None, limiter: Limiter, service: str) -> Lifespan:
    """`lifespan`, with the shedder's gauges sampled beside it."""
    @asynccontextmanager
    async def run(app: FastAPI) -> AsyncIterator[None]:
        sampler = asyncio.ensure_future(sample_gauges(limiter, service))
        try:
            async with lifespan(app) if lifespan is not None else nullcontext():
                yield
        finally:
            sampler.cancel()
    return run


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
