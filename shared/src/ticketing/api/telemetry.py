"""Every request, hot paths included: its request id (in the logs, the response and the events it causes)
and the RED metrics of its route: `ticketing_http_requests_total{service,route,method,status}` and
`ticketing_http_request_duration_seconds{service,route,method}`; with TRACING_ENABLED, its request id on its
OpenTelemetry server span (ticketing.tracing); and an access log line (action=http.request) for every
request, but for the hot paths' routine answers (2xx, 4xx in under a second), which would cost more than
the request itself under a sale: their metrics say how many there were.

The outermost middleware build_app adds, so it sees what the others answer (413s, the hot paths). The
route label is the route's template (`/holds/{hold_id}`), never the raw path (bounded cardinality); a
request no route matched is `unmatched`. Cheap on purpose: the labelled children are looked up once per
(route, method, status) and kept (docs/benchmarks.md: the hold and reservation hot paths with and
without it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticketing import request_id, tracing
from ticketing.api.hot_path import HOT_ROUTE
from ticketing.logs import log_action

logger = logging.getLogger("ticketing.access")

REQUESTS = Counter("ticketing_http_requests_total", "HTTP requests answered", ["service", "route", "method", "status"])
DURATION = Histogram("ticketing_http_request_duration_seconds", "HTTP request duration (first byte in, response out)",
                     ["service", "route", "method"],
                     buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
_HEADER = request_id.HEADER.encode()


class RequestTelemetry:
    """`app.add_middleware(RequestTelemetry, service="hold-service")`, added last (outermost)."""

    def __init__(self, app: ASGIApp, service: str, access_log: bool = True) -> None:
        self.app, self.service, self.access_log = app, service, access_log
        self._counters: dict[tuple[str, str, int], Any] = {}
        self._timers: dict[tuple[str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        offered = next((v.decode("latin-1") for k, v in scope["headers"] if k == _HEADER), None)
        rid = request_id.accept(offered)
        token = request_id.CURRENT.set(rid)
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (_HEADER, rid.encode())]
                if tracing.enabled():  # its server span (ServiceApp's, outside this one) ends with the body
                    tracing.name_request(scope["method"], _route(scope), rid)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:  # ServerErrorMiddleware, outside this one, answers 500 after this
            if tracing.enabled():
                tracing.name_request(scope["method"], _route(scope), rid)
            raise
        finally:
            seconds = time.perf_counter() - started
            route = self._record(scope, status, seconds)
            if self.access_log and (HOT_ROUTE not in scope or status >= 500 or seconds >= 1.0):
                log_action(logger, "http.request", method=scope["method"], route=route, path=scope["path"],
                           status=status, ms=round(seconds * 1000, 2))
            request_id.CURRENT.reset(token)

    def _record(self, scope: Scope, status: int, seconds: float) -> str:
        route = _route(scope)
        method = scope["method"]
        counter = self._counters.get((route, method, status))
        if counter is None:
            counter = self._counters[(route, method, status)] = REQUESTS.labels(self.service, route, method,
                                                                                str(status))
        timer = self._timers.get((route, method))
        if timer is None:
            timer = self._timers[(route, method)] = DURATION.labels(self.service, route, method)
        counter.inc()
        timer.observe(seconds)
        return route


def _route(scope: Scope) -> str:
    return scope.get(HOT_ROUTE) or getattr(scope.get("route"), "path", None) or "unmatched"
