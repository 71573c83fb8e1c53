"""A Jepsen-style history: every call recorded as `invoke`, then `ok`, `fail` or `info` (docs/reliability.md).

- ok: 2xx, the call took effect;
- fail: a refusal that by contract changed nothing (4xx, 503 UNAVAILABLE), or a connection never made;
- info: the outcome is unknown (timeout, connection cut mid-call, any other 5xx). A bare 5xx other than
  503 is also a contract breach, which the checker counts.

The checker never trusts the history for state (it reads the databases); it uses it for what only the
caller saw: acknowledged holds that must exist, refusals the contract forbids, which journeys ran.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

DEFINITE_REFUSALS = {503}


@dataclass
class Journey:
    """What one customer tried in one journey; the checker reads its outcome from the databases."""

    id: int
    customer: int
    scenario: str
    showtime: int | None = None
    hold_id: str | None = None
    booking_id: str | None = None
    payment_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class History:
    t0: float = field(default_factory=time.monotonic)
    ops: list[dict[str, Any]] = field(default_factory=list)
    journeys: dict[int, Journey] = field(default_factory=dict)
    journey_base: int = 0  # the first journey id: histories recorded apart (one per process) merge without clashes

    def _add(self, **op: Any) -> dict[str, Any]:
        now = time.time()  # wall clock too, to find the moment in the services' logs
        op = {"index": len(self.ops), "time": round(time.monotonic() - self.t0, 3),
              "wall": time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}", **op}
        self.ops.append(op)
        return op

    async def call(self, process: str, journey: int | None, f: str, value: dict[str, Any],
                   send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response | None:
        """Record and make one HTTP call; the response (None when there was none)."""
        self._add(type="invoke", process=process, journey=journey, f=f, value=value)
        started = time.monotonic()
        outcome: dict[str, Any] = {"process": process, "journey": journey, "f": f, "value": value}
        try:
            response = await send()
        except httpx.ConnectError as exc:
            self._add(type="fail", error=type(exc).__name__, latency=_since(started), **outcome)
            return None
        except httpx.HTTPError as exc:
            self._add(type="info", error=type(exc).__name__, latency=_since(started), **outcome)
            return None
        body = _json(response)
        kind = ("ok" if response.status_code < 300 else
                "fail" if response.status_code < 500 or response.status_code in DEFINITE_REFUSALS else "info")
        self._add(type=kind, status=response.status_code, error=body.get("error") if kind != "ok" else None,
                  body=_summary(body), latency=_since(started), **outcome)
        return response

    def extend(self, ops: list[dict[str, Any]], journeys: list[Journey] | None = None) -> None:
        """Ops and journeys another History recorded on the same clock (another process of the run), appended
        in the order they arrive; each op takes its index here."""
        for op in ops:
            self.ops.append({**op, "index": len(self.ops)})
        self.journeys.update((j.id, j) for j in journeys or ())

    def nemesis(self, f: str, kind: str, **value: Any) -> None:
        """A fault injected by the harness (kill, restart, pause, resume), as Jepsen's nemesis process."""
        self._add(type=kind, process="nemesis", journey=None, f=f, value=value)

    def journey(self, customer: int, scenario: str) -> Journey:
        j = Journey(id=self.journey_base + len(self.journeys), customer=customer, scenario=scenario)
        self.journeys[j.id] = j
        return j

    def completions(self, f: str | None = None) -> Iterator[dict[str, Any]]:
        return (op for op in self.ops if op["type"] != "invoke" and op["process"] != "nemesis"
                and (f is None or op["f"] == f))

    @classmethod
    def load(cls, path: Path) -> History:
        """A history written by dump()."""
        history = cls()
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "journey" in record and isinstance(record["journey"], dict):
                j = Journey(**record["journey"])
                history.journeys[j.id] = j
            else:
                history.ops.append(record)
        return history

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as fh:
            for op in self.ops:
                fh.write(json.dumps(op, default=str) + "\n")
            for j in self.journeys.values():
                fh.write(json.dumps({"journey": asdict(j)}) + "\n")


def _since(started: float) -> float:
    return round(time.monotonic() - started, 4)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _summary(body: dict[str, Any]) -> dict[str, Any]:
    keep = ("holdId", "bookingId", "paymentId", "amountCents", "discountCents", "status", "seats", "expiresAt",
            "discountAmount", "eligible", "redirectUrl", "version")
    return {k: body[k] for k in keep if k in body}


def fault_spans(ops: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    """(start, end, what) of each fault the nemesis injected: from its injection to the moment it was brought
    back, in seconds of the run's clock."""
    spans, started = [], {}
    for op in ops:
        if op["process"] != "nemesis":
            continue
        if op["type"] == "invoke":
            started[op["f"]] = (op["time"], op["value"])
        elif op["f"] in started:
            t0, value = started.pop(op["f"])
            detail = ",".join(f"{k}={v}" for k, v in value.items() if k != "leads")
            spans.append((t0, op["time"], f"{op['f']}({detail})"))
    return spans


def under_fault(ops: list[dict[str, Any]], at: float, settle: float = 10.0) -> bool:
    """Whether a call answered at `at` met a fault being absorbed: from its injection until `settle` seconds
    after it was brought back (a failover, a rebalance)."""
    return any(start <= at <= end + settle for start, end, _ in fault_spans(ops))
