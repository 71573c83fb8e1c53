"""What the customers measured: latency per step (from the history, as each customer saw it) and requests/s."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..e2e.saga.history import History

# The steps a customer takes, in the order of a journey (history `f` -> what the dashboard calls it).
STEPS = {"room_look": "look at room", "queue_join": "join queue", "queue_poll": "poll queue", "seat_map": "seat map",
         "hold": "hold", "hold_best": "hold (best available)",
         "quote": "quote", "checkout": "checkout", "pay_page": "pay (page)", "pay": "pay (gateway)",
         "payment": "payment status", "hold_status": "hold status", "cancel": "cancel",
         "booking_cancel": "cancel booking"}


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 when empty)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values) + 0.5) - 1))]


@dataclass
class StepFigures:
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    refused: int  # 4xx and 503 answers (a taken seat, a used voucher: the sale's ordinary refusals)
    failed: int  # no answer or another 5xx


@dataclass
class Measures:
    """Follows a History as it grows: read() takes only the operations added since the last call."""

    history: History
    latencies: dict[str, list[float]] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    recent: deque[float] = field(default_factory=deque)  # completion times (history clock) of the last second
    _seen: int = 0

    def read(self) -> None:
        ops = self.history.ops
        for op in ops[self._seen:]:
            if op["type"] == "invoke" or op["process"] == "nemesis":
                continue
            f = op["f"]
            self.latencies.setdefault(f, []).append(float(op.get("latency", 0.0)) * 1000)
            self.recent.append(op["time"])
            status = op.get("status")
            if op["type"] == "fail" and status is not None:
                self.refused[f] = self.refused.get(f, 0) + 1
            elif op["type"] != "ok":
                self.failed[f] = self.failed.get(f, 0) + 1
        self._seen = len(ops)

    def per_second(self, now: float) -> float:
        while self.recent and self.recent[0] < now - 1.0:
            self.recent.popleft()
        return float(len(self.recent))

    def steps(self) -> dict[str, StepFigures]:
        out: dict[str, StepFigures] = {}
        for f in STEPS:
            values = sorted(self.latencies.get(f, []))
            if values:
                out[f] = StepFigures(len(values), percentile(values, 50), percentile(values, 99), values[-1],
                                     self.refused.get(f, 0), self.failed.get(f, 0))
        return out
