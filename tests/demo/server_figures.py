"""What the services measured of each step, read from their own /metrics, to set beside what customers saw.

Every API exports `ticketing_http_request_duration_seconds{service,route,method}` (ticketing.api.telemetry): a histogram
of the time from a request's first byte in to its response out, inside the service. Read before and after the
sale, the difference is the sale's requests (and the dashboard's few reads of the seat maps). A quantile of a
histogram is known to its bucket only: p50 "<= 2.5 ms" says the bucket that holds the median ends at 2.5 ms.
The mean (sum / count) is exact. hold-service also counts the requests its rate limits refused, by the limit
(`ticketing_hold_rate_limited_total{limit}`: customer or address): the demo's customers come from many addresses so that
the per-address limit refuses none of them (addresses.py), and the closing table checks it did not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_incrementing

METRIC = "ticketing_http_request_duration_seconds"
REFUSED = "ticketing_hold_rate_limited_total"
# The customer's step (history `f`) -> the service (Platform.url key), method and route label that serve it.
ROUTES = {
    "queue_join": ("hold", "POST", "/showtimes/{showtime_id}/queue"),
    "queue_poll": ("hold", "GET", "/queue/{ticket}"),
    "seat_map": ("hold", "GET", "/showtimes/{showtime_id}/seats"),
    "hold": ("hold", "POST", "/showtimes/{showtime_id}/holds"),
    "hold_best": ("hold", "POST", "/showtimes/{showtime_id}/holds"),  # the same route: its figures are both kinds'
    "quote": ("voucher", "GET", "/vouchers/{code}/quote"),
    "checkout": ("pay", "POST", "/holds/{hold_id}/checkout"),
    "pay_page": ("sim", "POST", "/pay/{session_id}"),
    "pay": ("sim", "POST", "/sim/sessions/{session_id}/pay"),
    "payment": ("pay", "GET", "/payments/{payment_id}"),
    "hold_status": ("hold", "GET", "/holds/{hold_id}"),
    "cancel": ("hold", "DELETE", "/holds/{hold_id}"),
    "booking_cancel": ("hold", "POST", "/bookings/{booking_id}/cancel"),
}
Key = tuple[str, str, str]  # service, method, route


@dataclass
class Histograms:
    """Cumulative bucket counts (upper bound in seconds -> count), sums and counts, per (service, method, route)."""

    buckets: dict[Key, dict[float, float]] = field(default_factory=dict)
    sums: dict[Key, float] = field(default_factory=dict)
    counts: dict[Key, float] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # services whose /metrics did not answer
    refused: dict[str, float] | None = None  # hold-service's refusals by limit (None: not exported)


@dataclass
class ServerFigures:
    count: int
    p50_le_ms: float  # the upper bound of the bucket holding the median (inf: past the last bucket)
    p99_le_ms: float
    mean_ms: float


def parse(service: str, text: str, into: Histograms) -> None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples if service == "hold" else ():
            if sample.name == REFUSED:
                into.refused = into.refused or {}
                limit = sample.labels["limit"]
                into.refused[limit] = into.refused.get(limit, 0.0) + sample.value
        if family.name != METRIC:
            continue
        for sample in family.samples:
            key = (service, sample.labels.get("method", ""), sample.labels.get("route", ""))
            if sample.name.endswith("_bucket"):
                le = float(sample.labels["le"])
                into.buckets.setdefault(key, {})[le] = into.buckets.get(key, {}).get(le, 0.0) + sample.value
            elif sample.name.endswith("_sum"):
                into.sums[key] = into.sums.get(key, 0.0) + sample.value
            elif sample.name.endswith("_count"):
                into.counts[key] = into.counts.get(key, 0.0) + sample.value


async def snapshot(client: httpx.AsyncClient, urls: dict[str, str]) -> Histograms:
    """Every service's request-duration histograms now (`urls`: service -> base URL)."""
    histograms = Histograms()
    for service in sorted({service for service, _, _ in ROUTES.values()}):
        text = await _metrics(client, urls.get(service))
        if text is None:
            histograms.unread.append(service)
            continue
        parse(service, text, histograms)
    return histograms


async def _metrics(client: httpx.AsyncClient, url: str | None) -> str | None:
    """A service's /metrics, asked up to three times when it does not answer within 10 s: right after a sale the
    services are still busy with its last calls and events."""
    if url is None:
        return None
    try:
        async for attempt in AsyncRetrying(retry=retry_if_exception_type(httpx.HTTPError), stop=stop_after_attempt(3),
                                           wait=wait_incrementing(start=1, increment=1), reraise=True):
            with attempt:
                r = await client.get(f"{url}/metrics", timeout=10)
                r.raise_for_status()
                return r.text
    except httpx.HTTPError:
        pass
    return None


def _quantile_bound(buckets: dict[float, float], count: float, q: float) -> float:
    rank = q * count
    for le in sorted(buckets):
        if buckets[le] >= rank:
            return le
    return math.inf


def step_figures(before: Histograms, after: Histograms) -> dict[str, ServerFigures]:
    """Each step's server-side figures over the requests made between the two snapshots."""
    out: dict[str, ServerFigures] = {}
    for step, key in ROUTES.items():
        count = after.counts.get(key, 0.0) - before.counts.get(key, 0.0)
        if count <= 0:
            continue
        earlier = before.buckets.get(key, {})
        buckets = {le: n - earlier.get(le, 0.0) for le, n in after.buckets.get(key, {}).items()}
        total = (after.sums.get(key, 0.0) - before.sums.get(key, 0.0)) * 1000
        out[step] = ServerFigures(int(count), _quantile_bound(buckets, count, 0.5) * 1000,
                                  _quantile_bound(buckets, count, 0.99) * 1000, total / count)
    return out


def refusals(before: Histograms, after: Histograms) -> dict[str, int] | None:
    """hold-service's refusals by limit between the two snapshots; None when they cannot be told."""
    if before.refused is None or after.refused is None:
        return None
    return {limit: int(n - before.refused.get(limit, 0.0)) for limit, n in after.refused.items()}


def bound(ms: float) -> str:
    return "past its last bucket" if math.isinf(ms) else f"≤{ms:g}"
