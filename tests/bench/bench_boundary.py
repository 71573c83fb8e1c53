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
import statistics
import sys
from pathlib import Path
from typing import Any

from bench_body_limit import ROUNDS, app, per_request_us
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
    served, without = app(), Bare(app())
    out: dict[str, dict[str, float]] = {}
    for name, path in (("hot route (HotPaths)", "/hot/42/holds"), ("FastAPI route", "/routed/42/holds")):
        pairs = []
        for round_ in range(ROUNDS):  # the two take turns going first
            first: Any = without if round_ % 2 else served
            second: Any = served if first is without else without
            a, b = await per_request_us(first, path), await per_request_us(second, path)
            pairs.append((a, b) if first is without else (b, a))
        bare, with_it = min(p[0] for p in pairs), min(p[1] for p in pairs)
        extra = statistics.median(g - w for w, g in pairs)
        print(f"{name:22s}: best round without the Boundary {bare:6.1f} us/request, with it {with_it:6.1f} "
              f"({with_it - bare:+.2f} us, {(with_it - bare) / bare:+.1%}); median difference {extra:+.2f} us")
        out[name] = {"without_us": round(bare, 2), "with_us": round(with_it, 2), "median_extra_us": round(extra, 2)}
    return out




if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from results import Results

    with Results("boundary") as r:
        r.data["per_request"] = asyncio.run(compare())
