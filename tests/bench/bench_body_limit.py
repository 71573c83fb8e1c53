"""make bench-body-limit: what the MAX_BODY_BYTES guard (ticketing.api.body_limit) costs per request.

The same app (ticketing.api.app.build_app) with and without the BodyLimit middleware, called in-process
over ASGI with a hold-sized POST (about 40 bytes of JSON): once on a hot route (HotPaths, as
POST /showtimes/{id}/holds is served) and once on a FastAPI-routed one. No server and no network, so the
difference is the middleware's own CPU. Time is this thread's CPU time and rounds alternate between the two
apps (taking turns going first), which filters out much of the noise of a shared machine; printed: the best
round of each (the steadiest figure) and the median of the per-round differences, in us of CPU per request.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from ticketing.api.app import build_app
from ticketing.api.body_limit import BodyLimit
from ticketing.api.hot_path import HotRoute
from ticketing.tokens import TokenVerifier

REQUESTS, ROUNDS = 2000, 15
BODY = b'{"seats": ["F5", "F6", "F7"]}'
router = APIRouter()


@router.post("/hot/{showtime_id}/holds")
async def hot(request: Request) -> Response:
    return JSONResponse({"n": len(await request.body())}, status_code=201)


@router.post("/routed/{showtime_id}/holds", status_code=201)
async def routed(request: Request) -> dict[str, int]:
    return {"n": len(await request.body())}


def app(without: type | None = None) -> FastAPI:
    """The app as every API builds it, or with the middleware `without` left out."""
    built = build_app(title="bench", tokens=TokenVerifier("x" * 32), routers=[router], max_body_bytes=65536,
                      hot_routes=[HotRoute("POST", "/hot/{showtime_id}/holds", hot)])
    built.user_middleware = [m for m in built.user_middleware if m.cls is not without]
    return built


async def per_request_us(asgi: FastAPI, path: str, method: str = "POST", clock: Callable[[], float] = time.thread_time,
                         finish: Callable[[], object] | None = None) -> float:
    """CPU us per request of REQUESTS hold-sized requests; `finish` runs inside the timed round (bench_tracing:
    the exporter's flush), `clock` is this thread's CPU unless told (other processes do not count)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"bench"), (b"authorization", b"Bearer " + b"x" * 180),
                         (b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8001), "state": {}}
    message = {"type": "http.request", "body": BODY, "more_body": False}

    async def receive() -> dict[str, object]:
        return message

    async def send(_: object) -> None:
        return None

    gc.collect()
    gc.disable()  # a collection landing in one round and not the other is noise, not the middleware
    try:
        started = clock()
        for _ in range(REQUESTS):
            await asgi(dict(scope), receive, send)
        if finish is not None:
            finish()
        return (clock() - started) / REQUESTS * 1e6
    finally:
        gc.enable()


async def compare(middleware: type) -> dict[str, dict[str, float]]:
    """CPU per request of the app without `middleware` and with it (as served), on a hot and a routed POST."""
    return await compare_apps(app(middleware), app(), middleware.__name__)


async def compare_apps(without: Any, served: Any, what: str) -> dict[str, dict[str, float]]:
    """CPU per request of two ASGI apps, one without `what` and one with it, on a hot and a routed POST."""
    out: dict[str, dict[str, float]] = {}
    for name, path in (("hot route (HotPaths)", "/hot/42/holds"), ("FastAPI route", "/routed/42/holds")):
        pairs = []
        for round_ in range(ROUNDS):  # the two apps take turns going first
            first, second = (without, served) if round_ % 2 else (served, without)
            a, b = await per_request_us(first, path), await per_request_us(second, path)
            pairs.append((a, b) if first is without else (b, a))
        bare, with_it = min(p[0] for p in pairs), min(p[1] for p in pairs)
        extra = statistics.median(g - w for w, g in pairs)
        print(f"{name:22s}: best round without {what} {bare:6.1f} us/request, with it {with_it:6.1f} "
              f"({with_it - bare:+.2f} us, {(with_it - bare) / bare:+.1%}); median difference {extra:+.2f} us")
        out[name] = {"without_us": round(bare, 2), "with_us": round(with_it, 2), "median_extra_us": round(extra, 2)}
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from results import Results

    with Results("body_limit") as r:
        r.data["per_request"] = asyncio.run(compare(BodyLimit))
