"""The notifier worker's HTTP port serves its health, readiness and metrics, and nothing of faust's own
(/router/ and /table/ told the cluster's layout and the tables' contents); every answer carries nosniff."""

from __future__ import annotations

import httpx


async def test_only_health_readiness_and_metrics_are_served(start_worker) -> None:  # type: ignore[no-untyped-def]
    with start_worker() as worker:
        async with httpx.AsyncClient(base_url=worker.url, timeout=10) as http:
            served = {path: await http.get(path) for path in ("/healthz", "/readyz", "/metrics")}
            faust = {path: await http.get(path) for path in ("/", "/router/", "/table/", "/graph/", "/stats/",
                                                             "/performance/", "/router/key/")}
    assert {p: r.status_code for p, r in served.items()} == dict.fromkeys(served, 200)
    assert {p: r.status_code for p, r in faust.items()} == dict.fromkeys(faust, 404)
    for path, response in {**served, **faust}.items():
        assert response.headers.get("x-content-type-options") == "nosniff", path
