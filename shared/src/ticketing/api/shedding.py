"""Load shedding: an API process refuses at once the work it cannot serve, by priority, instead of queueing it.

Past its limit of requests in flight (SHED_MAX_IN_FLIGHT, per process) a request gets 503 `UNAVAILABLE` with
`Retry-After`, in the contract's format, before anything reads its body. A saturated process that queued
instead answered everyone late: in the full-size demo checkouts waited 31 s (p99) and many ended in a 503
anyway; a client refused in a millisecond can retry elsewhere or later, and what is admitted stays fast.

The limit is fixed and measured (make bench-overload, docs/operations.md), with a short queue
(SHED_QUEUE_TIMEOUT_MS), rather than adaptive (Netflix's concurrency-limits, Envoy's adaptive concurrency),
because:
- one process serves routes whose latencies differ a hundredfold: a seat map from memory in tens of
  microseconds, a hold in milliseconds, a checkout that waits for the payment provider. A latency-gradient
  limit takes the fastest answers as its no-load baseline and reads every slow route as queueing, so it
  shrinks to its floor under an ordinary mix; per-route limits would cost more on every request;
- what a process runs out of under a rush is its event loop's one core, whose worth in requests in flight
  is stable and measurable on the hot path (the hold), and the balancer in front must agree with it
  (HAProxy's per-server maxconn, ticketing_testing.balancer): a fixed number can be written in both.
The queue is there for the bursts of random arrivals near the limit: a request past its share waits up to
SHED_QUEUE_TIMEOUT_MS for a slot (the most important waiter first) before its 503, so that a process below
its capacity refuses nothing; with as many waiting as the limit, the next is refused at once.

Priorities (each service declares its routes' in its app.py; `ShedRoute`): a request is admitted while the
work in flight is under its priority's share of the limit, so reads go first, then holds, and the payment
path (gateway callbacks, checkouts, extensions, a checkout's voucher reservation) last. Health, readiness,
metrics and long-lived streams (they have limits of their own) are never counted nor shed. A route may say
that it can answer from memory (`from_memory`, the seat map a process has cached): asked only when the
request would be shed, and then served, uncounted.

Cost on every request: a dict or one regular expression to find the route, and an integer compared,
incremented and decremented in the event loop (no lock: one loop per process). The gauges are sampled
once a second, not per request.

What it cannot do: the server has parsed a request and given it a task before any of this runs. A flood
several times what the process serves takes its core in that work alone, the loop's turns lengthen and the
admitted requests with them (make bench-overload at 4x, docs/benchmarks.md). Such a flood is refused before
the process: the balancer's per-instance limit and queue timeout, and the waiting room.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Gauge
from starlette.types import ASGIApp, Receive, Scope, Send

from ticketing.api.boundary import NOSNIFF
from ticketing.api.errors import ApiError
from ticketing.api.hot_path import template_regex
from ticketing.api.limiter import Limiter, Priority

SHED_REQUESTS = Counter("ticketing_http_requests_shed_total",
                        "Requests refused with 503 because the process was at its limit of work in flight",
                        ["service", "priority", "route"])
IN_FLIGHT = Gauge("ticketing_http_requests_in_flight",
                  "Requests in flight counted by the shedder: the highest of the last second, summed over the "
                  "processes",
                  ["service"], multiprocess_mode="livesum")
LIMIT = Gauge("ticketing_http_requests_in_flight_limit", "The limit of requests in flight (SHED_MAX_IN_FLIGHT), summed "
              "over the processes; 0: shedding off", ["service"], multiprocess_mode="livesum")


FromMemory = Callable[[Scope], bool]


@dataclass(frozen=True)
class ShedRoute:
    method: str
    path: str  # a FastAPI path template, as the route's own
    priority: Priority
    from_memory: FromMemory | None = None  # True when this request is answered from the process' memory


# Every service's own routes of build_app: /healthz, /readyz, /metrics never; its docs first.
COMMON_ROUTES = [ShedRoute("GET", "/healthz", Priority.NEVER), ShedRoute("GET", "/readyz", Priority.NEVER),
                 ShedRoute("GET", "/metrics", Priority.NEVER), ShedRoute("GET", "/docs", Priority.BROWSE),
                 ShedRoute("GET", "/openapi.json", Priority.BROWSE)]


class RouteTable:
    """(method, path) -> (priority, route template, from_memory): a dict for fixed paths, one regular
    expression per method for the templated ones (its named group says which route matched)."""

    def __init__(self, routes: Iterable[ShedRoute], default: Priority = Priority.HOLD) -> None:
        self.default = (int(default), None, None)
        self.exact: dict[str, dict[str, tuple[int, str, FromMemory | None]]] = {}  # method -> path -> rule
        templated = []
        for route in routes:
            if "{" in route.path:
                templated.append(route)
            else:
                rule = (int(route.priority), route.path, route.from_memory)
                self.exact.setdefault(route.method, {})[route.path] = rule
        self.by_group = {f"r{n}": (int(r.priority), r.path, r.from_memory) for n, r in enumerate(templated)}
        self.patterns = {method: _alternatives(templated, method) for method in {r.method for r in templated}}

    def rule(self, method: str, path: str) -> tuple[int, str | None, FromMemory | None]:
        exact = self.exact.get(method)
        if exact is not None and (found := exact.get(path)) is not None:
            return found
        pattern = self.patterns.get(method)
        if pattern is not None and (match := pattern.match(path)) is not None:
            return self.by_group[match.lastgroup or ""]
        return self.default


def _alternatives(templated: list[ShedRoute], method: str) -> re.Pattern[str]:
    """One expression for every templated route of `method`, each a named group r<its index in `templated`>."""
    groups = [f"(?P<r{n}>{template_regex(r.path, named=False)})" for n, r in enumerate(templated) if r.method == method]
    return re.compile(f"^(?:{'|'.join(groups)})$")


class Shedder:
    """`Shedder(app, limiter=..., routes=RouteTable(...), service="hold-service")`, the outermost layer of a
    service (build_app): a request refused costs no more than finding its route, and its body is never read.
    So its 503 carries what the layers inside would have added (nosniff) but no request id, and the RED
    metrics (telemetry.py) do not see it: ticketing_http_requests_shed_total counts it."""

    def __init__(self, app: ASGIApp, limiter: Limiter, routes: RouteTable, service: str,
                 retry_after_seconds: int = 1) -> None:
        self.app, self.limiter, self.routes, self.service = app, limiter, routes, service
        body = ApiError(503, "UNAVAILABLE", "the service is at its limit of work in flight, try again shortly",
                        retryAfterSeconds=retry_after_seconds).content()
        self.headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                        (b"retry-after", b"%d" % retry_after_seconds), NOSNIFF]
        self.body = {"type": "http.response.body", "body": body}
        self.counters: dict[tuple[int, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        priority, template, from_memory = self.routes.rule(scope["method"], scope["path"])
        limiter = self.limiter
        if priority == Priority.NEVER:
            await self.app(scope, receive, send)
            return
        if not limiter.try_acquire(priority):
            if from_memory is not None and from_memory(scope):
                await self.app(scope, receive, send)  # answered from memory: no slot taken, none needed
                return
            if not await limiter.acquire(priority):
                await self._shed(send, priority, template)
                return
        try:
            await self.app(scope, receive, send)
        finally:
            limiter.release()

    async def _shed(self, send: Send, priority: int, template: str | None) -> None:
        route = template or "unmatched"
        counter = self.counters.get((priority, route))
        if counter is None:
            counter = self.counters[(priority, route)] = SHED_REQUESTS.labels(
                self.service, Priority(priority).name.lower(), route)
        counter.inc()
        # A message of its own: an outer layer may add its headers to it in place (CORS).
        await send({"type": "http.response.start", "status": 503, "headers": list(self.headers)})
        await send(self.body)


async def sample_gauges(limiter: Limiter, service: str, every: float = 1.0) -> None:
    """The in-flight and limit gauges, once a second (a task of the app's lifespan)."""
    LIMIT.labels(service).set(limiter.limit)
    in_flight = IN_FLIGHT.labels(service)
    while True:
        in_flight.set(limiter.sample_peak())
        await asyncio.sleep(every)
