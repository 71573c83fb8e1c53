"""One booking as one OpenTelemetry trace (issue 16, TRACING_ENABLED): hold-service and payment-service
in-process (each served by uvicorn on its own port, so every hop is a real HTTP call), the gateway
simulator process, payment-service's real relay, Kafka, and hold-service's real consumer; spans collected
by opentelemetry-sdk's InMemorySpanExporter. The services' spans are the maintained instrumentations' (ASGI
for requests, asyncpg for SQL, redis-py for Redis, httpx for calls): the hold's request span has its SQL and
Redis commands as children.

The customer's app is instrumented (a root span; httpx's instrumentation, on in this process, makes each call
a CLIENT span and sends its `traceparent`): it holds seats, checks out (payment-service asks hold-service for
the hold) and pays. The gateway's callback is delivered by the test within the booking's trace, as a gateway
that propagates W3C trace context would; the
simulator, like most real gateways, sends none, and then the callback and what follows from it are a trace
of their own (shown the same way by the callback -> consumer hop below). PaymentSucceeded goes through the
outbox, the relay and Kafka, and is applied by hold-service's consumer: its span is the callback's child.
The consumer's per-record path (IdempotentConsumer.process, what its loop runs) is handed exactly our
record, read from the topic: other runs share the topic, and their events must not touch this database.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from aiokafka import ConsumerRecord, TopicPartition
from fastapi import FastAPI
from hold_service.config import HoldSettings
from hold_service.entrypoints.api.app import get_application as hold_application
from hold_service.entrypoints.consumer import payment_consumer
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from payment_service.config import Settings as PaymentSettings
from payment_service.entrypoints.api.app import get_application as payment_application
from ticketing import tracing
from ticketing.auth import issue_token
from ticketing.events import BOOKING_EVENTS
from ticketing.relay import OutboxRelay, RelayConfig
from ticketing_testing import free_port, service_process, stripe_event, stripe_signed

from ..e2e.saga.offsets import KafkaView

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HOLD_MIGRATIONS = ROOT / "services/hold-service/src/hold_service/sql/migrations"
PAYMENT_MIGRATIONS = ROOT / "services/payment-service/src/payment_service/sql/migrations"
SECRET = "booking-trace-test-jwt-secret-0123456789"
WEBHOOK_SECRET = "whsec_booking_trace_test_0123456789abcdef"
LOGS = ROOT / "var" / "log" / "tests"


@pytest.fixture(scope="module")
def simulator() -> Iterator[str]:
    port = free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    env = {"GATEWAY_SIMULATOR_PORT": str(port), "GATEWAY_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, "SIM_WEBHOOK_URL": "http://127.0.0.1:9/none"}  # events: by hand
    with service_process(["-m", "gateway_simulator"], env, ready_url=f"http://127.0.0.1:{port}/healthz",
                         log_path=LOGS / "booking-trace-simulator.log"):
        yield f"http://127.0.0.1:{port}"


@asynccontextmanager
async def served(app: FastAPI, port: int) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server stopped while starting"
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def bearer(sub: int, role: str = "customer") -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, sub=str(sub), role=role)}"}  # type: ignore[arg-type]


async def published(view: KafkaView, since: dict[TopicPartition, int], booking_id: str,
                    event_type: str) -> ConsumerRecord:
    """The booking's event of that type, read from the topic from `since` on."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        async for record, _ in view.read(BOOKING_EVENTS, since):
            if record.key == booking_id.encode() and dict(record.headers).get("ce_type") == event_type.encode():
                return record
        await asyncio.sleep(0.2)
    raise AssertionError(f"no {event_type} for booking {booking_id} on {BOOKING_EVENTS} within 30 s")


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def systems(spans: list[ReadableSpan], parent: ReadableSpan) -> set[str]:
    """The databases the CLIENT spans under `parent` called (db.system: postgresql, redis)."""
    return {str((s.attributes or {}).get("db.system")) for s in children(spans, parent) if s.kind == SpanKind.CLIENT}


def caller(spans: list[ReadableSpan], server: ReadableSpan) -> ReadableSpan:
    """The CLIENT span of the call that `server` answered."""
    [client] = [s for s in spans if s.context.span_id == server.parent.span_id]  # type: ignore[union-attr]
    assert client.kind == SpanKind.CLIENT, client.name
    return client


def one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    matching = [s for s in spans if s.name == name]
    assert len(matching) == 1, (name, [s.name for s in spans])
    return matching[0]


async def test_one_booking_is_one_trace_across_services_and_kafka(  # type: ignore[no-untyped-def]
        traced, simulator, migrated_dsn, redis_url, kafka_bootstrap) -> None:
    exporter, provider = traced
    hold_port, payment_port = free_port(), free_port()
    group = f"trace-{uuid.uuid4().hex[:8]}-"
    hold_settings = HoldSettings(database_url=migrated_dsn("HOLD_DATABASE_URL", HOLD_MIGRATIONS), redis_url=redis_url,
                                 jwt_secret=SECRET, kafka_bootstrap_servers=kafka_bootstrap,
                                 kafka_group_prefix=group, tracing_enabled=True,
                                 # every test's client is 127.0.0.1, one per-address budget in the shared Redis:
                                 # the suites before this one spend it (CI: 429 on this test's one hold)
                                 hold_rate_limit_per_ip_per_minute=10**9)
    payment_settings = PaymentSettings(
        database_url=migrated_dsn("PAYMENT_DATABASE_URL", PAYMENT_MIGRATIONS), jwt_secret=SECRET,
        stripe_webhook_secret=WEBHOOK_SECRET, stripe_api_base=simulator, kafka_bootstrap_servers=kafka_bootstrap,
        hold_service_url=f"http://127.0.0.1:{hold_port}", tracing_enabled=True)
    customer, showtime = 10**11 + uuid.uuid4().int % 10**11, 10**9 + uuid.uuid4().int % 10**12
    hold_app = hold_application(hold_settings)
    async with served(hold_app, hold_port) as hold_url, \
            served(payment_application(payment_settings), payment_port) as payment_url, \
            httpx.AsyncClient(timeout=30) as http, KafkaView(kafka_bootstrap) as view:
        r = await http.post(f"{hold_url}/admin/showtimes", headers=bearer(1, "admin"), json={
            "showtimeId": showtime, "title": "Traced", "startsAt": "2030-01-01T20:00:00Z", "priceCents": 1200,
            "rows": {"A": 4}})
        assert r.status_code == 201, r.text

        with provider.get_tracer("customer-app").start_as_current_span("book two seats") as root:
            r = await http.post(f"{hold_url}/showtimes/{showtime}/holds", json={"seats": ["A1", "A2"]},
                                headers=bearer(customer))
            assert r.status_code == 201, r.text
            hold = r.json()
            r = await http.post(f"{payment_url}/holds/{hold['holdId']}/checkout", json={},
                                headers={**bearer(customer), "Idempotency-Key": uuid.uuid4().hex})
            assert r.status_code == 201, r.text
            checkout = r.json()
            session_id = checkout["redirectUrl"].rsplit("/", 1)[1]
            r = await http.post(f"{simulator}/sim/sessions/{session_id}/pay",
                                json={"outcome": "succeeded", "delivery": "never"})
            assert r.status_code == 200, r.text

            since = await view.end_offsets(BOOKING_EVENTS)
            body, signature = stripe_signed(stripe_event(session_id, checkout["paymentId"],
                                                         amount=checkout["amountCents"]), WEBHOOK_SECRET)
            r = await http.post(f"{payment_url}/payments/callback", content=body, headers={
                "Content-Type": "application/json", "Stripe-Signature": signature})
            assert r.status_code == 200, r.text

        stop = asyncio.Event()
        relay = asyncio.create_task(OutboxRelay(RelayConfig(
            service="payment-service", dsn=payment_settings.database_url, bootstrap=kafka_bootstrap,
            poll_interval=0.2)).run(stop))
        try:
            record = await published(view, since, hold["bookingId"], "PaymentSucceeded")
        finally:
            stop.set()
            await relay
        consumer = payment_consumer(hold_settings, hold_app.state.service.pool, hold_app.state.deps)
        await consumer.open()
        try:
            await consumer.process(record)
        finally:
            await consumer.close()
        r = await http.get(f"{hold_url}/holds/{hold['holdId']}", headers=bearer(customer))
        assert r.json()["status"] == "BOOKED", r.text

    provider.force_flush()
    trace_id = root.get_span_context().trace_id
    # Consumers that earlier tests of the same pytest process left running share the process' tracer and may
    # apply this booking's events too (their own groups): only this test's consumer is judged.
    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == trace_id
             and str((s.attributes or {}).get("messaging.consumer.group.name", group)).startswith(group)]
    servers = [s for s in spans if s.kind == SpanKind.SERVER]
    assert sorted(s.name for s in servers) == sorted([
        "POST /showtimes/{showtime_id}/holds", "POST /holds/{hold_id}/checkout", "GET /holds/{hold_id}",
        "POST /holds/{hold_id}/extend", "POST /payments/callback"])
    holding = one(servers, "POST /showtimes/{showtime_id}/holds")
    checking_out = one(servers, "POST /holds/{hold_id}/checkout")
    asked = one(servers, "GET /holds/{hold_id}")  # hold-service, called by payment-service's checkout
    extended = one(servers, "POST /holds/{hold_id}/extend")  # the checkout extends the hold before the session
    callback = one(servers, "POST /payments/callback")
    applied = one(spans, f"process {BOOKING_EVENTS}")
    # Every call is a CLIENT span (httpx's instrumentation, the customer's app's and the services'), the parent
    # of the callee's SERVER span: the customer's three calls under the root, hold-service's two under checkout.
    root_id = root.get_span_context().span_id
    assert [caller(spans, s).parent.span_id for s in (holding, checking_out, callback)] == [root_id] * 3  # type: ignore[union-attr]
    assert [caller(spans, s).parent.span_id for s in (asked, extended)] == [checking_out.context.span_id] * 2  # type: ignore[union-attr]
    # The hold's own work, children of its request's span: its SQL (asyncpg's instrumentation) and its Redis
    # commands, the seat gate's Lua script among them (redis-py's).
    assert {"postgresql", "redis"} <= systems(spans, holding)
    assert any(s.name == "EVALSHA" for s in children(spans, holding))
    # PaymentSucceeded, written by the callback, relayed later, joins the same trace through the row's
    # `traceparent`: the consumer's span is the callback's child, and what it applies is in it.
    assert applied.parent.span_id == callback.context.span_id  # type: ignore[union-attr]
    assert "postgresql" in systems(spans, applied)
    assert applied.kind == SpanKind.CONSUMER
    assert applied.attributes["cloudevents.event_type"] == "PaymentSucceeded"  # type: ignore[index]
    assert applied.attributes["messaging.consumer.group.name"].endswith("hold-service.payments")  # type: ignore
    # The request id travels with the trace: forwarded on the call, carried by the event.
    assert asked.attributes[tracing.REQUEST_ID] == checking_out.attributes[tracing.REQUEST_ID]  # type: ignore[index]
    assert applied.attributes[tracing.REQUEST_ID] == callback.attributes[tracing.REQUEST_ID]  # type: ignore[index]
    _, trace, parent, _ = dict(record.headers)["traceparent"].decode().split("-")  # version, ..., flags
    assert (trace, parent) == (f"{trace_id:032x}", f"{callback.context.span_id:016x}")  # the event's parent
