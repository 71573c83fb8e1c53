"""OpenTelemetry traces, off unless TRACING_ENABLED: one booking's request, the service calls it makes, the
events it writes and the consumers that apply them, as one trace.

- every request is a SERVER span (`POST /holds/{hold_id}/checkout`, opentelemetry-instrumentation-asgi put
  outermost by ticketing.api.app), the child of the caller's W3C `traceparent` when it sent one, with its
  request id (ticketing.api.telemetry);
- inside it, the maintained instrumentations make a CLIENT span of every query (asyncpg), Redis command
  (redis-py) and call to another service (httpx, which sends the callee its `traceparent`):
  ticketing.tracing_libraries, which also says why aiokafka's is not among them;
- every outbox row (ticketing.outbox) written inside a span carries `traceparent` (and `tracestate`, if any):
  the relay publishes the row's headers as they are, later, and outside any request;
- ticketing.inbox opens a CONSUMER span per applied event, the child of the event's `traceparent`; the events
  its handler writes carry that span on;
- every log line written in a span names its `trace_id` and `span_id` (ticketing.logs).

Off (the default) nothing here imports the SDK or an instrumentation, no library is patched, the app has no
tracing layer, and every function returns at its first line: a request pays one call that compares with None
(docs/benchmarks.md: the cost with it on). One process is one service:
`configure` sets the process's tracer once, before the app or the worker is built. Events applied in a batch
(Inbox.apply_batch) get no span.

What can fail: an unreachable collector. The batch processor exports from its own thread and drops spans
when its queue is full (OTEL_BSP_MAX_QUEUE_SIZE, 2048); a request never waits for the collector.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from aiokafka import ConsumerRecord
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Tracer, format_span_id, format_trace_id
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp

from ticketing.settings import ServiceSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

_tracer: Tracer | None = None  # None: tracing is off
_provider: TracerProvider | None = None
_W3C = TraceContextTextMapPropagator()
_FIELDS = frozenset(f.encode() for f in _W3C.fields)  # traceparent, tracestate
REQUEST_ID = "ticketing.request_id"


def configure(settings: ServiceSettings, exporter: SpanExporter | None = None) -> TracerProvider | None:
    """With TRACING_ENABLED, this process's tracer (service.name = SERVICE_NAME), exporting to TRACING_EXPORTER
    (`exporter` instead: tests); its provider. None: tracing is off, or the process has its tracer already
    (the first call wins: one process is one service; a test configures it before building the apps)."""
    global _tracer, _provider
    if not settings.tracing_enabled or _tracer is not None:
        return None
    # Imported here: a process with tracing off never loads the SDK.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from ticketing.tracing_libraries import instrument, sampler

    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}),
                              sampler=sampler(settings.tracing_sample_ratio))
    exporter = exporter or _exporter(settings)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    instrument(provider)
    _tracer, _provider = provider.get_tracer("ticketing"), provider
    return provider


def reset() -> None:
    """Tracing off again in this process, the libraries' instrumentation taken off (tests)."""
    global _tracer, _provider
    if _tracer is not None:
        from ticketing.tracing_libraries import uninstrument

        uninstrument()
    _tracer = _provider = None


def _exporter(settings: ServiceSettings) -> SpanExporter | None:
    if settings.tracing_exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # As OpenTelemetry does with OTEL_EXPORTER_OTLP_ENDPOINT: the signal's path goes after the base URL.
        base = settings.otel_exporter_otlp_endpoint
        return OTLPSpanExporter(endpoint=f"{base.rstrip('/')}/v1/traces" if base else None)
    if settings.tracing_exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(formatter=lambda span: span.to_json(indent=None) + "\n")  # a line per span
    return None  # "none": spans are made and propagated, never exported


def server_middleware(app: ASGIApp) -> ASGIApp:
    """`app` inside OpenTelemetry's ASGI middleware (opentelemetry-instrumentation-asgi) when tracing is on: a
    SERVER span per request, the child of the caller's `traceparent`, named after its route template; `app`
    itself when off (not even a layer). ServiceApp puts it outermost, so a shed request has its span too."""
    if _tracer is None or _provider is None:
        return app
    from ticketing.tracing_libraries import server_middleware as traced

    return traced(app, _provider)


def enabled() -> bool:
    return _tracer is not None


def name_request(method: str, route: str, rid: str) -> None:
    """The current request's span named after its route's template (bounded, as the metrics' label), once
    routing has found it, with its request id (ticketing.api.telemetry, as the answer starts)."""
    if (span := trace.get_current_span()).is_recording():
        span.update_name(f"{method} {route}")
        span.set_attributes({"http.route": route, REQUEST_ID: rid})


def consumer_span(record: ConsumerRecord[Any, Any], consumer: str, rid: str | None) -> AbstractContextManager[Any]:
    """The span of applying one event, the child of its `traceparent` header; nothing when tracing is off."""
    return nullcontext() if _tracer is None else _consumer_span(_tracer, record, consumer, rid)


@contextmanager
def _consumer_span(tracer: Tracer, record: ConsumerRecord[Any, Any], consumer: str,
                   rid: str | None) -> Iterator[None]:
    headers = {k: v.decode(errors="replace") for k, v in record.headers or ()}
    attributes: dict[str, str | int] = {
        "messaging.system": "kafka", "messaging.operation.type": "process", "messaging.destination.name": record.topic,
        "messaging.destination.partition.id": str(record.partition), "messaging.kafka.offset": record.offset,
        "messaging.consumer.group.name": consumer, "cloudevents.event_type": headers.get("ce_type", ""),
        "cloudevents.event_id": headers.get("ce_id", "")}
    if rid is not None:
        attributes[REQUEST_ID] = rid
    with tracer.start_as_current_span(f"process {record.topic}", context=_W3C.extract(headers),
                                      kind=SpanKind.CONSUMER, attributes=attributes):
        yield


def log_ids() -> tuple[str, str] | None:
    """(trace_id, span_id) of the current span, in hex as OpenTelemetry writes them, for a log line written in
    it (ticketing.logs); None when tracing is off or no span is current."""
    if _tracer is None:
        return None
    span = trace.get_current_span().get_span_context()
    return (format_trace_id(span.trace_id), format_span_id(span.span_id)) if span.is_valid else None


def propagation_headers() -> dict[str, str]:
    """`traceparent` (and `tracestate`) of the current span, for a call or an event it causes; {} when off."""
    if _tracer is None:
        return {}
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)  # nothing when no span is current
    return carrier
