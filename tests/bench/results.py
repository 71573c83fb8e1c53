"""Where each benchmark leaves its figures for the report (`make bench` -> var/bench/<name>.json, report.py).

Every file also records the machine's load average (uptime's 1/5/15 min) and the speed of one of its cores
(`cpu_speed`) when the benchmark started and ended: the build machine is shared, and a figure taken at load 6
on 2 cores is not one taken at load 1. Nor is one taken while a neighbour on the same host slows the cores
down: a fixed loop of pure Python took 0.9-1.3 s back to back on an idle machine here, and the same
benchmark's latencies were several times higher in the slow hours (the load average does not see that).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[2] / "var" / "bench"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


SPEED_LOOP, SPEED_RUNS = 1_000_000, 5


def cpu_speed() -> dict[str, float]:
    """Milliseconds one core takes for a fixed loop of pure Python (SPEED_RUNS runs): the median and the
    spread. Higher is slower; compare it between runs like the load average."""
    times = []
    for _ in range(SPEED_RUNS):
        started, total = time.perf_counter(), 0
        for i in range(SPEED_LOOP):
            total += i
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1),
            "max_ms": round(max(times), 1)}


class Results:
    """`with Results("holds") as r: r.data["capacity"] = ...` writes var/bench/holds.json at the end."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data: dict[str, Any] = {}

    def __enter__(self) -> Results:
        self.data["started"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.data["load_before"] = load_average()
        self.data["cpu_speed_before"] = cpu_speed()
        self.data["cores"] = os.cpu_count()
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            return
        self.data["load_after"] = load_average()
        self.data["cpu_speed_after"] = cpu_speed()
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        (BENCH_DIR / f"{self.name}.json").write_text(json.dumps(self.data, indent=2, default=str))


def read_all() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(BENCH_DIR.glob("*.json")) if p.stem != "report"}
