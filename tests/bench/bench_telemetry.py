"""make bench-telemetry: what RequestTelemetry (ticketing.api.telemetry: RED metrics per route, the request id
taken or made and returned, the access log line) costs per request, the hot paths included.

As bench-body-limit measures its guard: the same app with and without the middleware, called in-process over
ASGI with a hold-sized POST on a hot route and on a FastAPI-routed one, this thread's CPU time, the two apps
taking turns. With a hold request costing its API process about 120 us of CPU as served by uvicorn (wrk,
`bench-holds`), the difference in us is set beside it: the throughput a CPU-bound API loses for it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ticketing.api.telemetry import RequestTelemetry

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_body_limit import compare
    from results import Results

    with Results("telemetry") as r:
        r.data["per_request"] = asyncio.run(compare(RequestTelemetry))
