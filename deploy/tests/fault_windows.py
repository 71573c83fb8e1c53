"""What callers saw during the fault run, per 5-second window (R16's figures, docs/reliability.md): the answers by
kind, the calls that got no answer, the p99 latency, and the fault under way, so each fault's disruption
shows. Read from the run's history (every call of the journeys and of the steady hold load)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from tests.e2e.saga.history import fault_spans as faults

WINDOW_SECONDS = 5.0
KINDS = ("2xx", "409", "4xx", "503", "5xx", "none")


def _kind(status: int | None) -> str:
    if status is None:
        return "none"  # no answer: connection refused or cut, timed out
    if status < 300:
        return "2xx"
    if status == 409:
        return "409"
    return "4xx" if status < 500 else "503" if status == 503 else "5xx"


def windows(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per 5 s of the run, by when each call was made."""
    rows: dict[int, dict[str, Any]] = {}
    for op in ops:
        if op["process"] == "nemesis" or op["type"] == "invoke":
            continue
        start = op["time"] - op.get("latency", 0.0)
        row = rows.setdefault(int(start // WINDOW_SECONDS), {"latencies": [], **dict.fromkeys(KINDS, 0)})
        row[_kind(op.get("status"))] += 1
        row["latencies"].append(op.get("latency", 0.0))
    spans = faults(ops)
    table = []
    for w in range(min(rows, default=0), max(rows, default=-1) + 1):
        row = rows.get(w, {"latencies": [], **dict.fromkeys(KINDS, 0)})
        lat = sorted(row.pop("latencies"))
        begin, end = w * WINDOW_SECONDS, (w + 1) * WINDOW_SECONDS
        table.append({"t": begin, "calls": len(lat), **row,
                      "p99_ms": round(lat[int(0.99 * (len(lat) - 1))] * 1000) if lat else 0,
                      "fault": "; ".join(what for s, e, what in spans if s < end and e >= begin)})
    return table


def render(table: list[dict[str, Any]]) -> str:
    head = f"{'t (s)':>6} {'calls':>6} " + " ".join(f"{k:>5}" for k in KINDS) + f" {'p99 ms':>7}  fault under way"
    lines = [head]
    for r in table:
        lines.append(f"{r['t']:>6.0f} {r['calls']:>6} " + " ".join(f"{r[k]:>5}" for k in KINDS)
                     + f" {r['p99_ms']:>7}  {r['fault']}")
    return "\n".join(lines)


async def steady_holds(history: Any, client: httpx.AsyncClient, url: str, token: str, showtime: int,
                       seats: list[str], rate: float, seconds: float) -> int:
    """Holds of 1-2 seats on `showtime` at a constant arrival rate (open loop: a slow answer does not slow
    the next request), each recorded in `history` as the load's. Returns how many were sent."""
    rng, sent, pending = random.Random(7), 0, set()
    start = time.monotonic()
    while (now := time.monotonic()) < start + seconds:
        picked = sorted(rng.sample(seats, rng.randint(1, 2)))
        call = history.call("load", None, "hold", {"showtime": showtime, "seats": picked},
                            lambda picked=picked: client.post(
                                f"{url}/showtimes/{showtime}/holds", json={"seats": picked},
                                headers={"Authorization": f"Bearer {token()}"}))  # type: ignore[operator]
        task = asyncio.create_task(call)
        pending.add(task)
        task.add_done_callback(pending.discard)
        sent += 1
        await asyncio.sleep(max(0.0, start + sent / rate - now))
    await asyncio.gather(*pending)
    return sent
