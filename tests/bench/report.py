"""make bench-report (the last step of `make bench`): every figure of var/bench/<name>.json beside the physical
limit measured in the same run (bench_limits.py), as a ratio; writes var/bench/report.json, report.md and the
plots (PNG) of throughput and p99 against offered load for holds, the seat map and vouchers.

The seat map's plot reads var/bench/seatmap.json's reads.sweep (full body) and reads.sweep_304 (`make bench-seatmap`);
its capacities are set beside the bare FastAPI route of the same app and payload, measured in that same run
(the issue's "bare endpoint"), rather than the limits run's. Figures on a shared 2-core machine
move by tens of percent between runs: the ratios within one run are what to compare, and every benchmark's
load average (uptime's 1/5/15 min, before and after) is in the report.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).parent))
from results import BENCH_DIR, read_all


def get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def rows(b: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """(our figure, the limit it cannot beat): each with its ratio."""
    bare = get(b, "limits", "bare_endpoint", "req_per_s")
    gate = get(b, "limits", "redis_gate_script", "calls_per_s")
    pg_hold = get(b, "limits", "pg_hold_update", "tps")
    pg_voucher = get(b, "limits", "pg_voucher_row", "tps")
    kafka = get(b, "limits", "kafka_producer", "messages_per_s")
    on, off = get(b, "holds", "gate_on") or {}, get(b, "holds", "gate_off") or {}
    points = get(b, "vouchers", "points") or []
    best = {mode: max((p["req_per_s"] for p in points if p["mode"] == mode), default=None)
            for mode in ("normal", "flash")}
    # The hot row measured in bench-vouchers' own run, beside the level where normal mode did best.
    normal = max((p for p in points if p["mode"] == "normal"), key=lambda p: p["req_per_s"], default={})
    same_run_row = normal.get("pgbench_hot_row_tps")
    gate_answered = on["capacity_per_s"] * on["gate_share"] if on.get("gate_share") is not None else None
    out = [
        ("POST holds, gate on: capacity (wrk)", on.get("capacity_per_s"), "req/s", "bare FastAPI endpoint", bare),
        ("POST holds, gate off: capacity (every hold to Postgres)", off.get("capacity_per_s"), "req/s",
         "bare FastAPI endpoint", bare),
        ("POST holds answered by the gate at 70 % (gate on)", gate_answered and round(gate_answered), "req/s",
         "redis-benchmark, gate script", gate),
        ("POST holds, gate off: capacity", off.get("capacity_per_s"), "req/s", "pgbench, conditional hold UPDATE",
         pg_hold),
        ("sell-out: admitted holds/s (L3)", get(b, "selloff", "admitted_per_s"), "holds/s",
         "pgbench, conditional hold UPDATE", pg_hold),
        ("vouchers, normal mode: best req/s (one hot row)", best["normal"], "req/s",
         *(("pgbench, hot voucher row, after each level (bench-vouchers)", same_run_row) if same_run_row
           else ("pgbench, hot voucher row", pg_voucher))),
        ("vouchers, flash mode: best req/s", best["flash"], "req/s", "bare FastAPI endpoint", bare),
        ("outbox relay: events/s", get(b, "outbox", "relay_events_per_s"), "events/s",
         *(("Kafka producer alone, interleaved rounds (bench-outbox)", get(b, "outbox", "producer_alone_per_s"))
           if get(b, "outbox", "producer_alone_per_s") else ("Kafka producer alone", kafka))),
    ]
    for shape, what in (("join", "waiting room: joins"), ("poll", "waiting room: position polls")):
        figure = get(b, "queue", shape) or {}
        out.append((f"{what}: capacity (wrk)", figure.get("per_s"), "req/s",
                    "bare FastAPI endpoint of the same shape (bench-queue)", figure.get("bare_per_s")))
    for shape, what in (("first", "first scans"), ("batch_scans", "offline scans synced")):
        out.append((f"door check-ins, {what}: admissions/s", get(b, "checkins", shape, "per_s"), "req/s",
                    "bare FastAPI endpoint of the same shape (bench-checkins)", get(b, "checkins", "bare", "per_s")))
    seat_map = get(b, "seatmap", "reads", "capacity_per_s") or {}
    reads = {"seat map, full body": "GET seat map (full body)", "seat map, 304": "GET seat map (304)",
             "what's on, full body": "GET /showtimes, what's on (full body)", "what's on, 304": "GET /showtimes (304)"}
    for name, label in reads.items():
        out.append((f"{label}: capacity (wrk)", seat_map.get(name), "req/s",
                    "bare FastAPI route, same app and payload (bench-seatmap)", seat_map.get("bare FastAPI route")))
    granted = get(b, "granted", "median") or {}
    out += [("granted holds: service, one fresh seat per hold (bench-granted)", granted.get("service_per_s"),
             "holds/s", "pgbench replaying one hold's statements, same run", granted.get("replay_per_s")),
            ("granted holds: pgbench replay of one hold's statements", granted.get("replay_per_s"), "tx/s",
             "pgbench, bare conditional UPDATE of a seat, same run (bench-granted)", granted.get("bare_per_s")),
            ("granted holds: pgbench replay of the service's statements, batched as it ran them",
             granted.get("batched_per_s"), "holds/s",
             "pgbench, bare conditional UPDATE of a seat, same run (bench-granted)", granted.get("bare_per_s")),
            ("granted holds: service, against its own floor (bench-granted)", granted.get("service_per_s"), "holds/s",
             "the same API answering 422 after the token's check, before any dependency, same run",
             granted.get("floor_per_s"))]
    out += [(f"pgbench: the bare UPDATE with {what} to its COMMIT", granted.get(f"{name}_per_s"), "tx/s",
             "pgbench, bare conditional UPDATE of a seat, same run (bench-granted)", granted.get("bare_per_s"))
            for name, what in (("bare+showtime", "the showtime's row"), ("bare+notify", "a NOTIFY"),
                               ("bare+both", "the showtime's row and a NOTIFY"))]
    out.append(("sustained granted holds/s, every consumer caught up (bench-sustained)",
                get(b, "sustained", "best_sustained_per_s"), "holds/s", "pgbench, conditional hold UPDATE", pg_hold))
    balanced = get(b, "cluster", "per_s") or {}
    for name in ("hold-service, one instance via HAProxy", "hold-service, two instances via HAProxy"):
        out.append((f"POST holds, {name.split(', ')[1]}: capacity (wrk)", balanced.get(name), "req/s",
                    "one instance reached directly, same run (bench-cluster)",
                    balanced.get("hold-service, one instance, direct")))
    return [{"figure": name, "value": value, "unit": unit, "limit": limit_name, "limit_value": limit,
             "ratio": round(value / limit, 3) if value and limit else None}
            for name, value, unit, limit_name, limit in out]


def median_of(rounds: list[dict[str, Any]] | None, key: str) -> float | None:
    return statistics.median(r[key] for r in rounds) if rounds else None


def save(figure: Any, name: str) -> str:
    """Legends and grids on every plot that has labelled lines, then the PNG under var/bench/; its name."""
    for ax in figure.axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(BENCH_DIR / name, dpi=90)
    return name


def plot_sweep(ax_rate: Any, ax_p99: Any, points: list[dict[str, Any]], label: str, x: str = "offered_per_s") -> None:
    xs = [p[x] for p in points]
    ax_rate.plot(xs, [p.get("answered_per_s", p.get("req_per_s")) for p in points], "o-", label=f"{label} answered")
    if any("admitted_per_s" in p for p in points):
        ax_rate.plot(xs, [p.get("admitted_per_s", 0) for p in points], "s--", label=f"{label} admitted")
    admitted = "admitted_p99_ms" in points[0]  # holds: the admitted ones apart from every answer
    ax_p99.plot(xs, [p["p99_ms"] for p in points], "o-", label=f"{label}, every answer" if admitted else label)
    if admitted:
        ax_p99.plot(xs, [p["admitted_p99_ms"] for p in points], "s--", label=f"{label}, admitted holds")


def plots(b: dict[str, dict[str, Any]]) -> list[str]:
    made = []
    figure, (rate, p99) = plt.subplots(1, 2, figsize=(11, 4))
    sweep = get(b, "holds", "gate_on", "sweep") or []
    if sweep:
        plot_sweep(rate, p99, sweep, "gate on")
        p99.axhline(100, color="red", linestyle=":", label="100 ms")
    rate.set(title="POST holds: throughput vs offered (open loop)", xlabel="offered req/s", ylabel="req/s")
    p99.set(title="POST holds: p99 vs offered", xlabel="offered req/s", ylabel="p99 ms (corrected)", yscale="log")
    made.append(save(figure, "holds.png"))
    figure, (rate, p99) = plt.subplots(1, 2, figsize=(11, 4))
    for mode in ("normal", "flash"):
        points = [p for p in get(b, "vouchers", "points") or [] if p["mode"] == mode]
        if points:
            plot_sweep(rate, p99, points, mode, x="concurrency")
    rate.set(title="voucher reservations: throughput vs concurrency (wrk)", xlabel="connections (closed loop)",
             ylabel="req/s")
    p99.set(title="voucher reservations: p99 vs concurrency", xlabel="connections (closed loop)", ylabel="p99 ms")
    made.append(save(figure, "vouchers.png"))
    if seatmap := get(b, "seatmap", "reads", "sweep"):
        figure, (rate, p99) = plt.subplots(1, 2, figsize=(11, 4))
        plot_sweep(rate, p99, seatmap, "full body")
        if not_modified := get(b, "seatmap", "reads", "sweep_304"):
            plot_sweep(rate, p99, not_modified, "304 (If-None-Match)")
        p99.axhline(50, color="red", linestyle=":", label="50 ms")
        rate.set(title="GET seat map: throughput vs offered", xlabel="offered req/s", ylabel="req/s")
        p99.set(title="GET seat map: p99 vs offered", xlabel="offered req/s", ylabel="p99 ms", yscale="log")
        made.append(save(figure, "seatmap.png"))
    plt.close("all")
    return made


def cpu_per_request(b: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The in-process micro-benchmarks (bench-body-limit, bench-telemetry, bench-boundary, bench-tracing): us of
    CPU a request adds to a hot route and to a FastAPI route. Their limit is the request itself (the route
    without it)."""
    out = []
    for bench, what in (("body_limit", "the MAX_BODY_BYTES guard"), ("telemetry", "RequestTelemetry"),
                        ("boundary", "the Boundary (MAX_HEADER_BYTES, nosniff)")):
        for route, figure in (get(b, bench, "per_request") or {}).items():
            out.append({"what": what, "route": route, "extra_us": figure.get("median_extra_us"),
                        "without_us": figure.get("without_us")})
    for route, settings in (get(b, "tracing", "per_request") or {}).items():
        off = (settings.get("off") or {}).get("best_us")
        for setting, figure in settings.items():
            if setting != "off":
                out.append({"what": f"tracing: {setting}", "route": route, "extra_us": figure.get("median_extra_us"),
                            "without_us": off})
    return out


def speed(figure: dict[str, float] | None) -> str:
    return "-" if not figure else f"{figure['median_ms']:.0f} ({figure['min_ms']:.0f}-{figure['max_ms']:.0f})"


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Benchmark report", "",
             "Each figure beside the physical limit measured in the same run on the same machine "
             "(`make bench-limits`), as a ratio. The machine is shared: compare ratios within one run; the load "
             "averages say how busy it was, the core speed how much a neighbour on the host slowed it.", "",
             "| figure | value | limit (same run) | limit value | ratio |", "|---|---|---|---|---|"]
    for r in report["rows"]:
        value = "-" if r["value"] is None else f"{r['value']:,} {r['unit']}"
        limit = "-" if r["limit_value"] is None else f"{r['limit_value']:,}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['figure']} | {value} | {r['limit']} | {limit} | {ratio} |")
    lines += ["", "| latency | p50 ms | p99 ms |", "|---|---|---|"]
    for name, p50, p99 in report["latency"]:
        lines.append(f"| {name} | {'-' if p50 is None else f'{p50:.1f}'} | {'-' if p99 is None else f'{p99:.1f}'} |")
    if report["cpu_per_request"]:
        lines += ["", "| in-process, CPU a request adds | route | us added | us without it |", "|---|---|---|---|"]
        for r in report["cpu_per_request"]:
            extra = "-" if r["extra_us"] is None else f"{r['extra_us']:+.1f}"
            without = "-" if r["without_us"] is None else f"{r['without_us']:.1f}"
            lines.append(f"| {r['what']} | {r['route']} | {extra} | {without} |")
    lines += ["", "| benchmark | load average before (1/5/15 min) | after | core speed before: ms for a fixed loop, "
              "median (min-max) | after |", "|---|---|---|---|---|"]
    for name, load in report["load"].items():
        lines.append(f"| {name} | {load['before']} | {load['after']} | {speed(load.get('speed_before'))} | "
                     f"{speed(load.get('speed_after'))} |")
    lines += ["", *[f"![{p}]({p})" for p in report["plots"]]]
    if "seatmap.png" not in report["plots"]:
        lines += ["", "Seat map: no sweep in `var/bench/seatmap.json` (run `make bench-seatmap`)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    b = read_all()
    if "limits" not in b:
        print("no var/bench/limits.json: run make bench (or make bench-limits first)", file=sys.stderr)
        return 1
    latency = [("POST holds at 70 % of capacity, gate on (open loop): every answer",
                get(b, "holds", "gate_on", "run70_p50_ms"), get(b, "holds", "gate_on", "run70_p99_ms")),
               ("POST holds at 70 % of capacity, gate on: admitted holds (201)",
                get(b, "holds", "gate_on", "run70_admitted_p50_ms"),
                get(b, "holds", "gate_on", "run70_admitted_p99_ms")),
               *[(f"POST holds at 70 % of capacity, interleaved rounds (medians): {name}",
                  median_of(get(b, "holds", "latency_rounds", "rounds"), f"{key}_p50_ms"),
                  median_of(get(b, "holds", "latency_rounds", "rounds"), f"{key}_p99_ms"))
                 for name, key in (("admitted holds", "admitted"), ("bare endpoint, same rate", "bare"))],
               *[(f"GET seat map at 70 % of capacity: {name} (median of the rounds)",
                  get(b, "seatmap", "reads", "at70", name, "median_p50_ms"),
                  get(b, "seatmap", "reads", "at70", name, "median_p99_ms"))
                 for name in ("bare FastAPI route", "seat map, full body", "seat map, 304")],
               ("sell-out: admitted holds", get(b, "selloff", "admitted_p50_ms"), get(b, "selloff", "admitted_p99_ms")),
               ("sell-out: refused holds", get(b, "selloff", "refused_p50_ms"), get(b, "selloff", "refused_p99_ms")),
               ("outbox commit -> consume", get(b, "outbox", "commit_to_consume_p50_ms"),
                get(b, "outbox", "commit_to_consume_p99_ms")),
               ("waiting room opening: position polls (open loop)", get(b, "queue", "opening", "p50_ms"),
                get(b, "queue", "opening", "p99_ms"))]
    report = {"rows": rows(b), "latency": latency, "cpu_per_request": cpu_per_request(b), "plots": plots(b),
              "load": {name: {"before": d.get("load_before"), "after": d.get("load_after"),
                              "speed_before": d.get("cpu_speed_before"), "speed_after": d.get("cpu_speed_after")}
                       for name, d in b.items()},
              "benchmarks": b}
    (BENCH_DIR / "report.json").write_text(json.dumps(report, indent=2, default=str))
    text = markdown(report)
    (BENCH_DIR / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
