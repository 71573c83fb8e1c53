"""make bench-body-limit: what the MAX_BODY_BYTES guard (ticketing.api.body_limit) costs per request.

The same app (ticketing.api.app.build_app) with and without the BodyLimit middleware, called in-process
over ASGI with a hold-sized POST (about 40 bytes of JSON): once on a hot route (HotPaths, as
POST /showtimes/{id}/holds is served) and once on a FastAPI-routed one. No server and no network, so the
difference is the middleware's own CPU. Rounds alternate between the two apps and the best round of each
is kept, which filters out most of the noise of a shared machine. Prints microseconds per request.
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from ticketing.api.app import build_app
from ticketing.api.body_limit import BodyLimit
from ticketing.api.hot_path import HotRoute

REQUESTS, ROUNDS = 5000, 7
BODY = b'{"seats": ["F5", "F6", "F7"]}'
router = APIRouter()


@router.post("/hot/{showtime_id}/holds")
async def hot(request: Request) -> Response:
    return JSONResponse({"n": len(await request.body())}, status_code=201)


@router.post("/routed/{showtime_id}/holds", status_code=201)
async def routed(request: Request) -> dict[str, int]:
    return {"n": len(await request.body())}


def app(guarded: bool) -> FastAPI:
    built = build_app(title="bench", jwt_secret="x" * 32, routers=[router], max_body_bytes=65536,
                      hot_routes=[HotRoute("POST", "/hot/{showtime_id}/holds", hot)])
    if not guarded:
        built.user_middleware = [m for m in built.user_middleware if m.cls is not BodyLimit]
    return built


async def per_request_us(asgi: FastAPI, path: str) -> float:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"bench"), (b"authorization", b"Bearer " + b"x" * 180),
                         (b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8001), "state": {}}
    message = {"type": "http.request", "body": BODY, "more_body": False}

    async def receive() -> dict[str, object]:
        return message

    async def send(_: object) -> None:
        return None

    started = time.thread_time()
    for _ in range(REQUESTS):
        await asgi(dict(scope), receive, send)
    return (time.thread_time() - started) / REQUESTS * 1e6


async def main() -> None:
    apps = {"without": app(False), "with": app(True)}
    for name, path in (("hot route (HotPaths)", "/hot/42/holds"), ("FastAPI route", "/routed/42/holds")):
        best = {label: float("inf") for label in apps}
        for _ in range(ROUNDS):
            for label, asgi in apps.items():
                best[label] = min(best[label], await per_request_us(asgi, path))
        extra = best["with"] - best["without"]
        print(f"{name:22s}: without the guard {best['without']:6.1f} us/request, with it {best['with']:6.1f} "
              f"us/request: +{extra:.2f} us ({extra / best['without']:+.1%})")


if __name__ == "__main__":
    asyncio.run(main())
