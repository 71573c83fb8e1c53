"""ticketing.tracing: off by default, nothing of OpenTelemetry runs on a request (and a service process never
loads the SDK or an instrumentation); on, a server span per request (opentelemetry-instrumentation-asgi) named
after its route, the child of the caller's `traceparent`.
The whole chain across services and Kafka: tests/observability/test_booking_trace.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from ticketing import tracing
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.tokens import TokenVerifier
from ticketing_testing import REPO_ROOT

router = APIRouter()
CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"  # W3C's own example


@router.post("/shows/{show_id}/holds")
async def hot(request: Request) -> Response:
    return JSONResponse({"onward": tracing.propagation_headers()}, status_code=201)


@router.get("/shows/{show_id}")
async def routed(show_id: int) -> dict[str, object]:
    if show_id == 500:
        raise RuntimeError("broken")
    return {"onward": tracing.propagation_headers()}


def client() -> httpx.AsyncClient:
    app = build_app(title="traced", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=65536,
                    hot_routes=[HotRoute("POST", "/shows/{show_id}/holds", hot)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                             base_url="http://t")


@contextmanager
def otel_calls() -> Iterator[list[tuple[str, str]]]:
    """(function of the opentelemetry package, file that called it) for every call while inside."""
    calls: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and "/opentelemetry/" in frame.f_code.co_filename:
            calls.append((frame.f_code.co_name, frame.f_back.f_code.co_filename if frame.f_back else ""))
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


async def test_off_a_request_runs_nothing_of_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_tracer", None)
    async with client() as c:
        await c.get("/shows/1")  # warm: the middleware stack is built on the first request
        with otel_calls() as on_hot_path:
            hot_answer = await c.post("/shows/7/holds", headers={"traceparent": CALLER})
        with otel_calls() as on_routed_path:
            routed_answer = await c.get("/shows/7", headers={"traceparent": CALLER})
    assert hot_answer.json() == routed_answer.json() == {"onward": {}}  # nothing passed on either
    assert "traceparent" not in hot_answer.headers
    assert on_hot_path == []
    # FastAPI's routing looks up its own (disabled) telemetry context; our code calls nothing of it.
    assert [call for call in on_routed_path if "/ticketing/" in call[1]] == []


async def test_off_nothing_is_passed_on_even_inside_someone_elses_span(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_tracer", None)
    exporter = InMemorySpanExporter()
    other = TracerProvider()
    other.add_span_processor(SimpleSpanProcessor(exporter))
    with other.get_tracer("a library").start_as_current_span("its span"):
        assert tracing.propagation_headers() == {}
        async with client() as c:
            await c.get("/shows/1")
    assert [s.name for s in exporter.get_finished_spans()] == ["its span"]  # and none of ours


async def test_on_a_request_is_a_server_span_named_after_its_route(traced: tuple[Any, Any]) -> None:
    exporter, provider = traced
    async with client() as c:
        with otel_calls() as calls:
            hot_answer = await c.post("/shows/7/holds", headers={"traceparent": CALLER, "x-request-id": "r-1"})
        fresh, broken = await c.get("/shows/8"), await c.get("/shows/500")
    provider.force_flush()
    hot_span, fresh_span, broken_span = exporter.get_finished_spans()
    assert any("/ticketing/" in caller for _, caller in calls)  # the check above would have seen it
    assert hot_span.name == "POST /shows/{show_id}/holds" and hot_span.kind == SpanKind.SERVER
    assert f"{hot_span.context.trace_id:032x}" == CALLER.split("-")[1]
    assert f"{hot_span.parent.span_id:016x}" == CALLER.split("-")[2]
    attributes = dict(hot_span.attributes)  # opentelemetry-instrumentation-asgi's, ours among them
    assert {k: attributes.get(k) for k in ("http.method", "http.route", "http.status_code", tracing.REQUEST_ID)} \
        == {"http.method": "POST", "http.route": "/shows/{show_id}/holds", "http.status_code": 201,
            tracing.REQUEST_ID: "r-1"}
    onward = hot_answer.json()["onward"]["traceparent"].split("-")  # what a call or event made in it carries
    assert onward[1:3] == [f"{hot_span.context.trace_id:032x}", f"{hot_span.context.span_id:016x}"]
    assert fresh_span.name == "GET /shows/{show_id}" and fresh_span.parent is None  # no caller: a new trace
    assert fresh.json()["onward"]["traceparent"].split("-")[1] == f"{fresh_span.context.trace_id:032x}"
    assert broken.status_code == 500 and broken_span.status.status_code == StatusCode.ERROR
    assert broken_span.name == "GET /shows/{show_id}"  # named, though the route raised before answering


SERVICE_PROCESS = textwrap.dedent("""
    import asyncio, sys
    from hold_service.config import HoldSettings
    from hold_service.entrypoints.api.app import get_application

    app = get_application(HoldSettings())  # as uvicorn --factory builds it
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/nowhere", "raw_path": b"/nowhere", "query_string": b"", "root_path": "",
             "headers": [(b"traceparent", b"%s")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 404, sent
    import asyncpg
    patched = hasattr(asyncpg.Connection.execute, "__wrapped__")  # the asyncpg instrumentation's wrapper
    print("opentelemetry.sdk.trace" in sys.modules, "opentelemetry.instrumentation" in sys.modules, patched)
""") % CALLER


@pytest.mark.parametrize(("environment", "sdk_loaded"), [
    ({}, "False False False"), ({"TRACING_ENABLED": "true", "TRACING_EXPORTER": "none"}, "True True True")])
def test_a_service_with_tracing_off_never_loads_the_sdk(environment: dict[str, str], sdk_loaded: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACING_", "OTEL_"))}
    done = subprocess.run([sys.executable, "-c", SERVICE_PROCESS], env={**env, **environment}, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == sdk_loaded


def test_on_a_query_or_command_outside_any_span_is_not_a_trace_of_its_own(traced: tuple[Any, Any]) -> None:
    """The relay's polls and the jobs' sweeps query outside any span: their CLIENT spans (asyncpg's, redis-py's)
    would each start a trace; in a request's span they are its children."""
    _, provider = traced
    tracer = provider.get_tracer("a library")
    with tracer.start_span("SELECT", kind=SpanKind.CLIENT) as alone:
        assert not alone.is_recording()
    with tracer.start_as_current_span("POST /showtimes/{showtime_id}/holds", kind=SpanKind.SERVER):
        with tracer.start_span("SELECT", kind=SpanKind.CLIENT) as inside:
            assert inside.is_recording()
    with tracer.start_span("process booking-events", kind=SpanKind.CONSUMER) as consumer:
        assert consumer.is_recording()  # a trace may start at a consumer (an event that carried no traceparent)
