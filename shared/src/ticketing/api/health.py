"""`/healthz` (process up), `/readyz` (dependencies reachable), `/metrics` (Prometheus).

`/readyz` checks every dependency. `/readyz?check=postgres` checks only the named
ones: a Kubernetes readiness probe asks only for what the API cannot serve without (an API that still
answers with Redis or Kafka down must not be taken out of every Service at once by their outage).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from ticketing.api.errors import ApiError

Check = Callable[[], Awaitable[object]]

router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request, check: list[str] = Query(default=[])) -> JSONResponse:
    checks: dict[str, Check] = getattr(request.app.state, "readiness_checks", {})
    if unknown := sorted(set(check) - set(checks)):
        raise ApiError(422, "VALIDATION_ERROR", f"unknown readiness checks: {', '.join(unknown)}",
                       known=sorted(checks))
    if check:
        checks = {name: checks[name] for name in check}
    results = await asyncio.gather(*(_probe(check) for check in checks.values()))
    report = dict(zip(checks, results, strict=True))
    ready = all(v == "ok" for v in report.values())
    return JSONResponse({"status": "ready" if ready else "not_ready", "checks": report},
                        status_code=200 if ready else 503)


# Declared as text/plain so /openapi.json matches what Prometheus scrapes (schema fuzzing checks it).
@router.get("/metrics", response_class=PlainTextResponse)
async def metrics() -> Response:
    return Response(generate_latest(_registry()), media_type=CONTENT_TYPE_LATEST)


def _registry() -> CollectorRegistry:
    """This process's metrics; with several server processes behind one port (uvicorn --workers), all of
    theirs, added up: prometheus_client's multiprocess mode, which its own PROMETHEUS_MULTIPROC_DIR turns on."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry


async def _probe(check: Check, timeout: float = 2.0) -> str:
    try:
        await asyncio.wait_for(check(), timeout)
        return "ok"
    except Exception as exc:  # a readiness probe reports, it never raises
        return f"down: {type(exc).__name__}"
