"""Where each benchmark leaves its figures for the report (`make bench` -> var/bench/<name>.json, report.py).

Every file also records the machine's load average (uptime's 1/5/15 min) when the benchmark started and
ended: the build machine is shared, and a figure taken at load 6 on 2 cores is not one taken at load 1.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[2] / "var" / "bench"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Results:
    """`with Results("holds") as r: r.data["capacity"] = ...` writes var/bench/holds.json at the end."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data: dict[str, Any] = {}

    def __enter__(self) -> Results:
        self.data["started"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.data["load_before"] = load_average()
        self.data["cores"] = os.cpu_count()
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            return
        self.data["load_after"] = load_average()
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        (BENCH_DIR / f"{self.name}.json").write_text(json.dumps(self.data, indent=2, default=str))


def read_all() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(BENCH_DIR.glob("*.json")) if p.stem != "report"}
