"""make bench-boundary: what the Boundary (ticketing.api.boundary: the request head's size against
MAX_HEADER_BYTES, nosniff on every answer) costs per request, in-process.

The same app as every API builds it, called over ASGI with a hold-sized POST carrying a bearer token, with the
Boundary around its stack (as served) and without it; on a hot route and on a FastAPI-routed one. Measured as
bench-body-limit measures its guard (its `per_request_us`: this thread's CPU, rounds alternating, best rounds
and the median of the per-round differences). The server-side part of the limit (HeadLimitedHttpTools) adds a
slice of each read and a comparison: it is in bench-holds and bench-seatmap, which run the real server.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bench_body_limit import app, compare_apps
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send


class Bare:
    """The app's own stack without the Boundary, called as FastAPI calls it (scope["app"] set)."""

    def __init__(self, built: FastAPI) -> None:
        self.built, self.stack = built, FastAPI.build_middleware_stack(built)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self.built
        await self.stack(scope, receive, send)


async def compare() -> dict[str, dict[str, float]]:
    return await compare_apps(Bare(app()), app(), "the Boundary")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from results import Results

    with Results("boundary") as r:
        r.data["per_request"] = asyncio.run(compare())
