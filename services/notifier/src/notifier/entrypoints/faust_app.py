"""The faust-streaming app: the `booking-events` agent, the e-mail sender task and the ops pages.

Why faust's own web server on 8004 (not a separate HTTP server): faust-streaming 0.15.3 already runs an
aiohttp server inside the worker, started after the consumer is up; adding /healthz, /readyz and
/metrics as pages keeps one process, one port and one event loop, and the probes see the real app.
It serves those three only (OpsWeb): none of faust's own pages (/router/ and /table/ tell the cluster's
layout and tables' contents, the index and statistics pages more), and every answer carries nosniff.

Delivery: the agent has `concurrency=1` (faust-streaming issue #606: with more, an offset can be
committed past an in-flight message). Faust acks an event when the agent asks for the next one, i.e.
after `IdempotentConsumer.process` committed the inbox row + effect, and commits acked offsets every
`broker_commit_interval`; a crash before that commit redelivers, and the inbox makes it a no-op.
`process` never raises (transient errors retry, poison goes to booking-events.DLQ), so faust never
acks a message whose effect did not commit.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import faust
from aiohttp import web as aiohttp_web
from faust.auth import SASLCredentials, SSLCredentials
from faust.types.auth import CredentialsT
from faust.web import Request, Response, View
from faust.web.drivers.aiohttp import Web as AiohttpWeb
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from ticketing import tracing
from ticketing.consumer import IdempotentConsumer
from ticketing.events import BOOKING_EVENTS
from ticketing.kafka import client_options, kafka_reachable
from ticketing.logs import configure_logging
from ticketing.metrics import ROLE_UP

from notifier.bootstrap import Service
from notifier.entrypoints.consumer import booking_events_processor
from notifier.service_layer.sender import deliver_emails

logger = logging.getLogger(__name__)


class OpsWeb(AiohttpWeb):
    default_blueprints = production_blueprints = debug_blueprints = optional_blueprints = []

    def __init__(self, app: faust.App, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.web_app.on_response_prepare.append(_nosniff)


async def _nosniff(_: aiohttp_web.Request, response: aiohttp_web.StreamResponse) -> None:
    response.headers["X-Content-Type-Options"] = "nosniff"


class NotifierApp(faust.App):
    notifier: Service  # what bootstrap() wired (faust.App has a `service` of its own)
    processor: IdempotentConsumer

    def _new_web(self) -> OpsWeb:
        return OpsWeb(self)

    async def on_first_start(self) -> None:
        await super().on_first_start()
        # faust's Worker installed its own handlers; every line must be JSON with `action`.
        configure_logging("notifier", self.notifier.deps.settings.log_level)
        tracing.configure(self.notifier.deps.settings)

    async def on_start(self) -> None:
        await super().on_start()
        await self.processor.open()

    async def on_stop(self) -> None:
        await super().on_stop()  # stops the consumer first, so no event is mid-transaction below
        await self.processor.close()
        await self.notifier.close()


def create_app(service: Service, roles: set[str]) -> NotifierApp:
    s = service.deps.settings
    brokers = [f"kafka://{host.strip()}" for host in s.kafka_bootstrap_servers.split(",")]
    app = NotifierApp(s.consumer_name, broker=brokers, store="memory://",
                      broker_credentials=_broker_credentials(s.kafka_bootstrap_servers),
                      datadir=f"{s.faust_data_dir}/{{conf.id}}-data",
                      web_enabled=True, web_bind=s.http_host, web_host=s.http_host, web_port=s.http_port,
                      topic_disable_leader=True, topic_allow_declare=False, broker_commit_interval=1.0,
                      consumer_auto_offset_reset="earliest",
                      broker_session_timeout=s.kafka_session_timeout_seconds,
                      broker_heartbeat_interval=s.kafka_heartbeat_interval_seconds)
    app.notifier = service
    app.processor = booking_events_processor(service.deps, service.pool)
    _ops_pages(app)
    if "consumer" in roles:
        _consumer_agent(app)
    if "sender" in roles:
        app.task(_sender_task(app))
    for role in roles:  # an alert fires when no instance of a role reports
        ROLE_UP.labels("notifier", role).set(1)
    return app


def _broker_credentials(bootstrap: str) -> CredentialsT | None:
    """faust's form of the platform's Kafka security (ticketing.kafka.client_options, the one source)."""
    options = client_options(bootstrap)
    if options["security_protocol"].startswith("SASL"):
        return SASLCredentials(username=options["sasl_plain_username"], password=options["sasl_plain_password"],
                               mechanism=options["sasl_mechanism"], ssl_context=options.get("ssl_context"))
    if options["security_protocol"] == "SSL":
        return SSLCredentials(options["ssl_context"])
    return None


def _consumer_agent(app: NotifierApp) -> None:
    topic = app.topic(BOOKING_EVENTS, value_serializer="raw", key_serializer="raw")

    @app.agent(topic, concurrency=1)
    async def booking_events(stream: Any) -> None:
        async for event in stream.events():
            await app.processor.process(event.message)  # opened in on_start, before any agent runs
            # An event of a type no handler takes (by its type header: a SeatsHeld, most of the topic) queued
            # no e-mail: waking the sender for it cost a pass over the queue per event.
            if app.processor.inbox.wanted(event.message):
                app.notifier.deps.wake_sender.set()


def _sender_task(app: NotifierApp) -> Any:
    async def sender() -> None:
        await deliver_emails(app.notifier.deps)
    return sender


def _ops_pages(app: NotifierApp) -> None:
    @app.page("/healthz")
    async def healthz(web: View, request: Request) -> Response:
        return web.json({"status": "ok"})

    @app.page("/readyz")
    async def readyz(web: View, request: Request) -> Response:
        checks = {"postgres": await _postgres_ok(app),
                  "kafka": await kafka_reachable(app.notifier.deps.settings.kafka_bootstrap_servers)}
        report = {k: "ok" if v else "down" for k, v in checks.items()}
        ready = all(checks.values())
        return web.json({"status": "ready" if ready else "not_ready", "checks": report},
                        status=200 if ready else 503)

    @app.page("/metrics")
    async def metrics(web: View, request: Request) -> Response:
        # As a header, not content_type=: aiohttp refuses a content_type that carries "; charset=", and
        # CONTENT_TYPE_LATEST does (the page answered 500 before).
        return web.bytes(generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _postgres_ok(app: NotifierApp) -> bool:
    try:
        await asyncio.wait_for(app.notifier.pool.fetchval("SELECT 1"), 2.0)
        return True
    except Exception:
        return False
