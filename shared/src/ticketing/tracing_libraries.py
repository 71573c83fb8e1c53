"""The maintained OpenTelemetry instrumentations ticketing.tracing turns on with TRACING_ENABLED, and imports only
then: asyncpg's (a CLIENT span per query), redis-py's (one per command, a Lua script's EVALSHA included), httpx's
(one per call to another service; it sends the callee its `traceparent`) and the ASGI middleware (a SERVER span
per request).

Not FastAPI's own instrumentor: it wraps Starlette's stack only when that stack is its ServerErrorMiddleware, and
ours has the Boundary and the Shedder outside it (ticketing.api.app), so it would skip our apps; the ASGI
middleware it uses is put there by hand instead. Not aiokafka's either: its producer span starts when the relay
publishes a row, long after the request, in a trace of its own, and it appends a second `traceparent` header
after the row's own (written in the request's span, ticketing.envelope), which a consumer reading the last one
would follow; its consumer span ends on receipt, before the event is applied. The outbox row carries the
request's context and ticketing.inbox's CONSUMER span, the child of it, covers applying the event.

A query or command made outside any span (the relay's polls, the jobs' sweeps) would be a trace of its own,
hundreds a minute that say nothing: the sampler drops a CLIENT span that has no parent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult, TraceIdRatioBased
from opentelemetry.trace import Link, SpanKind, TraceState
from opentelemetry.util.types import Attributes
from starlette.types import ASGIApp

_LIBRARIES = (AsyncPGInstrumentor, RedisInstrumentor, HTTPXClientInstrumentor)  # singletons, global patches


def instrument(provider: TracerProvider) -> None:
    for library in _LIBRARIES:
        library().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]


def uninstrument() -> None:
    for library in _LIBRARIES:
        library().uninstrument()  # type: ignore[no-untyped-call]


def server_middleware(app: ASGIApp, provider: TracerProvider) -> ASGIApp:
    # Metrics are Prometheus' (ticketing.api.telemetry): the middleware's own are given a no-op meter.
    return OpenTelemetryMiddleware(app, default_span_details=_method, tracer_provider=provider,  # type: ignore[no-untyped-call]
                                   meter_provider=NoOpMeterProvider(), exclude_spans=["receive", "send"])


def _method(scope: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The span's first name; ticketing.api.telemetry names it after the route's template once routing found it
    (`POST /holds/{hold_id}`, as the metrics' route label), a hot route's included."""
    return scope.get("method", "HTTP"), {}


class _NoRootClient(Sampler):
    """`root`'s decision, but a CLIENT span that starts a trace is dropped (see above)."""

    def __init__(self, root: Sampler) -> None:
        self._root = root

    def should_sample(self, parent_context: Context | None, trace_id: int, name: str,
                      kind: SpanKind | None = None, attributes: Attributes = None,
                      links: Sequence[Link] | None = None, trace_state: TraceState | None = None) -> SamplingResult:
        if kind == SpanKind.CLIENT:
            return SamplingResult(Decision.DROP)
        return self._root.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"NoRootClient{{{self._root.get_description()}}}"


def sampler(ratio: float) -> Sampler:
    """A caller's decision kept (ParentBased); a trace that starts here sampled at TRACING_SAMPLE_RATIO."""
    return ParentBased(_NoRootClient(TraceIdRatioBased(ratio)))
