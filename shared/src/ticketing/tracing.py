"""OpenTelemetry traces, off unless TRACING_ENABLED: one booking's request, the service calls it makes, the
events it writes and the consumers that apply them, as one trace.

- ticketing.api.telemetry opens a SERVER span per request (`POST /holds/{hold_id}/checkout`), the child of
  the caller's W3C `traceparent` when it sent one;
- every outgoing service call (payment-service's ServiceClient, voucher-service's HttpPayments) and every
  outbox row (ticketing.outbox) written inside a span carries `traceparent` (and `tracestate`, if any): the
  relay publishes the row's headers as they are;
- ticketing.inbox opens a CONSUMER span per applied event, the child of the event's `traceparent`; the events
  its handler writes carry that span on;
- every log line written in a span names its `trace_id` and `span_id` (ticketing.logs).

Off (the default) nothing here imports the SDK and every function returns at its first line: a request pays
one call that compares with None (docs/benchmarks.md: the cost with it on). One process is one service:
`configure` sets the process's tracer once, before the app or the worker is built. Events applied in a batch
(Inbox.apply_batch) get no span.

What can fail: an unreachable collector. The batch processor exports from its own thread and drops spans
when its queue is full (OTEL_BSP_MAX_QUEUE_SIZE, 2048); a request never waits for the collector.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from aiokafka import ConsumerRecord
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, format_span_id, format_trace_id
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ticketing.settings import ServiceSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

_tracer: Tracer | None = None  # None: tracing is off
_W3C = TraceContextTextMapPropagator()
_FIELDS = frozenset(f.encode() for f in _W3C.fields)  # traceparent, tracestate
REQUEST_ID = "ticketing.request_id"


def configure(settings: ServiceSettings, exporter: SpanExporter | None = None) -> TracerProvider | None:
    """With TRACING_ENABLED, this process's tracer (service.name = SERVICE_NAME), exporting to TRACING_EXPORTER
    (`exporter` instead: tests); its provider. None: tracing is off, or the process has its tracer already
    (the first call wins: one process is one service; a test configures it before building the apps)."""
    global _tracer
    if not settings.tracing_enabled or _tracer is not None:
        return None
    # Imported here: a process with tracing off never loads the SDK.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}),
                              sampler=ParentBased(TraceIdRatioBased(settings.tracing_sample_ratio)))
    exporter = exporter or _exporter(settings)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    _tracer = provider.get_tracer("ticketing")
    return provider


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


class ServerSpan:
    """The span of one HTTP request, current while the request is handled."""

    def __init__(self, tracer: Tracer, method: str, headers: Iterable[tuple[bytes, bytes]], rid: str) -> None:
        parent = _W3C.extract({k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k in _FIELDS})
        self.method = method
        self.span = tracer.start_span(method, context=parent, kind=SpanKind.SERVER,
                                      attributes={"http.request.method": method, REQUEST_ID: rid})
        self._token = context.attach(trace.set_span_in_context(self.span))

    def end(self, route: str, status: int) -> None:
        """Named after the route's template (bounded, as the metrics' label), once routing has found it."""
        if self.span.is_recording():  # a span sampled out keeps nothing: skip the work
            self.span.update_name(f"{self.method} {route}")
            self.span.set_attributes({"http.route": route, "http.response.status_code": status})
            if status >= 500:
                self.span.set_status(Status(StatusCode.ERROR))
        self.span.end()
        context.detach(self._token)


def server_span(method: str, headers: Iterable[tuple[bytes, bytes]], rid: str) -> ServerSpan | None:
    return None if _tracer is None else ServerSpan(_tracer, method, headers, rid)


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
