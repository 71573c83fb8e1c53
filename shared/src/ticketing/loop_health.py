"""A worker's own HTTP port: `/metrics` (Prometheus) and `/healthz`, the liveness of its event loop.

The port is served by a thread, so it answers even while the event loop is stuck (a blocking call, a busy
loop in a job): a liveness probe of `/metrics` would keep such a worker alive forever. So the loop beats
(`Heartbeat.run`, a task beside the roles) and `/healthz` answers 503 once the last beat is older than
`stall_seconds`: a blocked loop is an unhealthy worker, and Kubernetes restarts it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

BEAT_SECONDS = 1.0
STALL_SECONDS = 5.0  # a loop that has not run a beat for this long is stuck


class Heartbeat:
    def __init__(self, stall_seconds: float = STALL_SECONDS) -> None:
        self.stall_seconds = stall_seconds
        self.last = time.monotonic()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.last = time.monotonic()
            try:
                await asyncio.wait_for(stop.wait(), BEAT_SECONDS)
            except TimeoutError:
                pass

    def lag(self) -> float:
        """Seconds since the loop last ran its beat (about BEAT_SECONDS at most while it runs)."""
        return time.monotonic() - self.last


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Probes and scrapes every few seconds: no access log."""


Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def app(heartbeat: Heartbeat, metrics: Wsgi | None = None) -> Wsgi:
    metrics = metrics or make_wsgi_app()

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/healthz":
            return metrics(environ, start_response)
        lag = heartbeat.lag()
        alive = lag <= heartbeat.stall_seconds
        body = json.dumps({"status": "ok" if alive else "stalled", "loopLagSeconds": round(lag, 3)}).encode()
        start_response("200 OK" if alive else "503 Service Unavailable",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    return serve


def serve(port: int, host: str, heartbeat: Heartbeat) -> WSGIServer:
    """/metrics and /healthz on `port`, from a daemon thread; returns the server (shutdown() stops it)."""
    server = make_server(host, port, app(heartbeat), ThreadingWSGIServer, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="metrics-and-liveness", daemon=True).start()
    return server
