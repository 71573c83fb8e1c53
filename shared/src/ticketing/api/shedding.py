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
  (HAProxy's per-server maxconn, deploy/local/cluster/apps.sh): a fixed number can be written in both.
The queue is there for the bursts of random arrivals near the limit: a request past its share waits up to
SHED_QUEUE_TIMEOUT_MS for a slot (the most important waiter first) before its 503, so that a process below
its capacity refuses nothing.

Priorities (each service declares its routes' in its app.py; `ShedRoute`): a request is admitted while the
work in flight is under its priority's share of the limit, so reads go first, then holds, and the payment
path (gateway callbacks, checkouts, extensions, a checkout's voucher reservation) last. Health, readiness,
metrics and long-lived streams (they have limits of their own) are never counted nor shed. A route may say
that it can answer from memory (`from_memory`, the seat map a process has cached): asked only when the
request would be shed, and then served, uncounted.

Cost on every request: a dict or one regular expression to find the route, and an integer compared,
incremented and decremented in the event loop (no lock: one loop per process). The gauges are sampled
once a second, not per request.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from prometheus_client import Counter, Gauge
from starlette.types import ASGIApp, Receive, Scope, Send

from ticketing.api.boundary import NOSNIFF
from ticketing.api.errors import ApiError
from ticketing.api.hot_path import template_regex

SHED_REQUESTS = Counter("http_requests_shed_total", "Requests refused with 503 because the process was at its "
                        "limit of work in flight", ["service", "priority", "route"])
IN_FLIGHT = Gauge("http_requests_in_flight", "Requests in flight counted by the shedder: the highest of the last "
                  "second, summed over the processes", ["service"], multiprocess_mode="livesum")
LIMIT = Gauge("http_requests_in_flight_limit", "The limit of requests in flight (SHED_MAX_IN_FLIGHT), summed "
              "over the processes; 0: shedding off", ["service"], multiprocess_mode="livesum")


class Priority(IntEnum):
    """Lower is shed first."""

    BROWSE = 0  # reads a customer repeats: seat maps, the catalogue, queue polls
    HOLD = 1  # taking seats; a route with no declared priority
    PAY = 2  # gateway callbacks, checkouts, hold extensions, a checkout's voucher reservation
    NEVER = 3  # health, readiness, metrics, streams: never counted nor shed


# The share of the limit each priority may fill, in percent (NEVER is not counted).
SHARES = {Priority.BROWSE: 50, Priority.HOLD: 75, Priority.PAY: 100}

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


class Limiter:
    """Requests in flight in one process, and the waiters for a slot, one queue per priority."""

    def __init__(self, max_in_flight: int, queue_timeout_ms: float = 0.0) -> None:
        self.limit = max_in_flight
        self.caps = [max(1, max_in_flight * SHARES[p] // 100) for p in sorted(SHARES)]
        self.queue_timeout = queue_timeout_ms / 1000
        self.in_flight = self.peak = 0
        self.waiters: list[deque[asyncio.Future[bool]]] = [deque() for _ in self.caps]
        self.waiting = 0  # futures in the queues, the expired and cancelled ones included until popped

    def try_acquire(self, priority: int) -> bool:
        if self.in_flight < self.caps[priority]:
            self.in_flight += 1
            if self.in_flight > self.peak:
                self.peak = self.in_flight
            return True
        return False

    async def acquire(self, priority: int) -> bool:
        """A slot, now or within the queue timeout; False: shed it."""
        if self.try_acquire(priority):
            return True
        if not self.queue_timeout:
            return False
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self.waiters[priority].append(waiter)
        self.waiting += 1
        timer = loop.call_later(self.queue_timeout, _expire, waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            # The client left (the task is cancelled) just after a release handed this waiter its slot.
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.release()
            raise
        finally:
            timer.cancel()

    def release(self) -> None:
        """The slot goes to the most important waiter whose share it fits, else back to the pool."""
        if self.waiting:
            for priority in range(len(self.caps) - 1, -1, -1):
                if self._hand_over(priority):
                    return
        self.in_flight -= 1

    def _hand_over(self, priority: int) -> bool:
        queue = self.waiters[priority]
        if not queue or self.in_flight > self.caps[priority]:
            return False
        while queue:
            waiter = queue.popleft()
            self.waiting -= 1
            if not waiter.done():
                waiter.set_result(True)  # in_flight stays: the slot passes on
                return True
        return False

    def sample_peak(self) -> int:
        """The highest in flight since the last sample."""
        peak, self.peak = self.peak, self.in_flight
        return peak


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class RouteTable:
    """(method, path) -> (priority, route template, from_memory): a dict for fixed paths, one regular
    expression per method for the templated ones (its named group says which route matched)."""

    def __init__(self, routes: Iterable[ShedRoute], default: Priority = Priority.HOLD) -> None:
        self.default = (int(default), None, None)
        self.exact: dict[tuple[str, str], tuple[int, str, FromMemory | None]] = {}
        templated = []
        for route in routes:
            if "{" in route.path:
                templated.append(route)
            else:
                self.exact[(route.method, route.path)] = (int(route.priority), route.path, route.from_memory)
        self.by_group = {f"r{n}": (int(r.priority), r.path, r.from_memory) for n, r in enumerate(templated)}
        self.patterns = {method: re.compile("^(?:" + "|".join(
            f"(?P<r{n}>{template_regex(r.path, named=False)})" for n, r in enumerate(templated) if r.method == method)
            + ")$") for method in {r.method for r in templated}}

    def rule(self, method: str, path: str) -> tuple[int, str | None, FromMemory | None]:
        found = self.exact.get((method, path))
        if found is not None:
            return found
        pattern = self.patterns.get(method)
        if pattern is not None and (match := pattern.match(path)) is not None:
            return self.by_group[match.lastgroup or ""]
        return self.default


class Shedder:
    """`Shedder(app, limiter=..., routes=RouteTable(...), service="hold-service")`, the outermost layer of a
    service (build_app): a request refused costs no more than finding its route, and its body is never read.
    So its 503 carries what the layers inside would have added (nosniff) but no request id, and the RED
    metrics (telemetry.py) do not see it: http_requests_shed_total counts it."""

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
