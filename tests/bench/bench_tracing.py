"""make bench-tracing: what OpenTelemetry tracing (ticketing.tracing, TRACING_ENABLED) costs per request.

The same app (ticketing.api.app.build_app: RequestTelemetry outermost, as every API) called in-process over
ASGI with a hold-sized POST on a hot route (HotPaths, as POST /showtimes/{id}/holds is served) and a GET on a
FastAPI-routed one, under four settings of the process's tracer:
- off: TRACING_ENABLED unset (the default);
- on, exporter none: every request's server span (opentelemetry-instrumentation-asgi's middleware, outermost)
  made and ended, nothing exported;
- on, OTLP: spans batched and sent as protobuf over HTTP to a local sink (a process that answers 200),
  as to a collector; the batch is flushed inside the timed round, so its encoding and sending count;
- on, OTLP, 1 % sampled (TRACING_SAMPLE_RATIO=0.01): what a sale would run with.
Time is this process's CPU time (the exporter's thread included), rounds take turns going first, gc is off
inside a round; printed: the best round of each (the steadiest figure) and the median of the per-round
differences to "off", in us of CPU per request. The four tracers are made once and swapped between rounds
(the process has one tracer; swapping it is what a restart with other settings would do).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench_body_limit import REQUESTS, per_request_us  # the same requests, timed the same way
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from results import Results
from ticketing import tracing
from ticketing.api.app import build_app
from ticketing.api.hot_path import HotRoute
from ticketing.settings import ServiceSettings
from ticketing.tokens import TokenVerifier
from ticketing_testing import free_port, service_process

ROUNDS = 11
SINK = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
"""
router = APIRouter()


@router.post("/hot/{showtime_id}/holds")
async def hot(request: Request) -> Response:
    return JSONResponse({"n": len(await request.body())}, status_code=201)


@router.get("/routed/{hold_id}")
async def routed(hold_id: str) -> dict[str, str]:
    return {"holdId": hold_id}


def app() -> FastAPI:
    return build_app(title="bench", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=65536,
                     hot_routes=[HotRoute("POST", "/hot/{showtime_id}/holds", hot)])


@contextmanager
def tracers(sink_port: int) -> Iterator[dict[str, tuple[object, object, FastAPI]]]:
    """name -> (tracer, provider to flush, the app built under it) for each setting; `off` has None, None. An app's
    server span middleware is put in its stack when the stack is built, so each setting has its own app."""
    made: dict[str, tuple[object, object, FastAPI]] = {"off": (None, None, built())}
    settings = {"on, exporter none": {"tracing_exporter": "none"},
                "on, OTLP": {"tracing_exporter": "otlp"},
                "on, OTLP, 1 % sampled": {"tracing_exporter": "otlp", "tracing_sample_ratio": 0.01}}
    for name, options in settings.items():
        tracing.reset()  # configure() keeps a process's first tracer; the bench makes one per setting
        provider = tracing.configure(ServiceSettings(
            tracing_enabled=True, service_name="bench", otel_exporter_otlp_endpoint=f"http://127.0.0.1:{sink_port}",
            **options))
        made[name] = (tracing._tracer, provider, built())
    tracing.reset()
    try:
        yield made
    finally:
        for _, provider, _ in made.values():
            if provider is not None:
                provider.shutdown()  # type: ignore[attr-defined]


def built() -> FastAPI:
    """app(), its middleware stack built now, under the process's current tracer."""
    asgi = app()
    asgi.middleware_stack = asgi.build_middleware_stack()
    return asgi


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main(figures: dict[str, dict[str, dict[str, float]]]) -> None:
    """`figures[route][setting]`: best round (us of CPU a request) and the median difference to off."""
    sink_port = free_port()
    with service_process(["-c", SINK, str(sink_port)], {}, ready_url=f"http://127.0.0.1:{sink_port}/"), \
            tracers(sink_port) as settings:
        print(f"machine: {os.cpu_count()} cores, load average {load()}; {REQUESTS} requests x {ROUNDS} rounds "
              "per setting")
        for name, method, path in (("hot route (HotPaths)", "POST", "/hot/42/holds"),
                                   ("FastAPI route", "GET", "/routed/h-1")):
            rounds: dict[str, list[float]] = {setting: [] for setting in settings}
            order = list(settings)
            for round_ in range(ROUNDS + 1):
                for setting in order[round_ % len(order):] + order[:round_ % len(order)]:  # turns going first
                    tracer, provider, asgi = settings[setting]
                    tracing._tracer, tracing._provider = tracer, provider  # type: ignore[assignment]
                    # this process's CPU, the exporter's thread included; this round's spans sent within it
                    flush = getattr(provider, "force_flush", None)
                    figure = await per_request_us(asgi, path, method, time.process_time, flush)
                    if round_:  # the first round warms up every setting
                        rounds[setting].append(figure)
            tracing._tracer = tracing._provider = None
            off = rounds["off"]
            print(f"\n{name}: us of CPU per request (best round; median difference to off)")
            for setting, measured in rounds.items():
                extra = statistics.median(f - o for f, o in zip(measured, off, strict=True))
                print(f"  {setting:24s} {min(measured):7.1f} us   {extra:+7.2f} us ({extra / min(off):+.1%})")
                figures.setdefault(name, {})[setting] = {"best_us": round(min(measured), 2),
                                                         "median_extra_us": round(extra, 2)}
    print(f"\nload average after: {load()}")


if __name__ == "__main__":
    with Results("tracing") as r:
        asyncio.run(main(r.data.setdefault("per_request", {})))
