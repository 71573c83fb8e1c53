"""hold-service's own app plus two bare endpoints that send BENCH_BARE_BYTES bytes (the seat map's size),
for `make bench-seatmap`: the same process, middleware and payload, nothing else.

- GET /bench/bare: an ordinary FastAPI route, no parameters, the bytes built once (the issue's "bare endpoint");
- GET /bench/bare-hot: served ahead of FastAPI's routing, as the seat map is (ticketing.api.hot_path): the floor.
"""

from __future__ import annotations

import os

from fastapi import FastAPI, Request
from fastapi.responses import Response
from hold_service.entrypoints.api.app import get_application as hold_service_app
from ticketing.api.hot_path import HotPaths, HotRoute


def get_application() -> FastAPI:
    app = hold_service_app()
    body = b"x" * int(os.environ["BENCH_BARE_BYTES"])
    headers = {"etag": '"0"', "cache-control": "no-cache"}  # as the seat map's

    @app.get("/bench/bare")
    async def bare() -> Response:
        return Response(body, media_type="application/json", headers=headers)

    async def bare_hot(_: Request) -> Response:
        return Response(body, media_type="application/json", headers=headers)

    app.add_middleware(HotPaths, routes=[HotRoute("GET", "/bench/bare-hot", bare_hot)])
    return app
