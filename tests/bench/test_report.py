"""The benchmark report sets every benchmark's figures beside their limits, the waiting room's and the
in-process ones included (bench-queue and bench-tracing wrote nothing the report read)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from report import cpu_per_request, markdown, rows
from results import cpu_speed

FIGURES = {
    "limits": {"bare_endpoint": {"req_per_s": 6000}},
    "queue": {"join": {"per_s": 1500, "cpu_us": 600.0, "bare_per_s": 3750, "bare_cpu_us": 200.0},
              "poll": {"per_s": 3000, "cpu_us": 300.0, "bare_per_s": 3000, "bare_cpu_us": 200.0},
              "opening": {"p50_ms": 3.5, "p99_ms": 40.0}},
    "telemetry": {"per_request": {"hot route (HotPaths)": {"without_us": 16.0, "with_us": 28.0,
                                                           "median_extra_us": 12.1}}},
    "tracing": {"per_request": {"hot route (HotPaths)": {"off": {"best_us": 37.0, "median_extra_us": 0.0},
                                                         "OTLP, 1 % sampled": {"best_us": 62.0,
                                                                               "median_extra_us": 25.0}}}},
}


def test_the_waiting_rooms_figures_stand_beside_a_bare_endpoint_of_the_same_shape() -> None:
    by_name = {r["figure"]: r for r in rows(FIGURES)}
    joins = by_name["waiting room: joins: capacity (wrk)"]
    polls = by_name["waiting room: position polls: capacity (wrk)"]
    assert (joins["value"], joins["limit_value"], joins["ratio"]) == (1500, 3750, 0.4)
    assert (polls["value"], polls["limit_value"], polls["ratio"]) == (3000, 3000, 1.0)


def test_the_in_process_figures_are_what_each_adds_to_a_request() -> None:
    table = cpu_per_request(FIGURES)
    assert {(r["what"], r["extra_us"], r["without_us"]) for r in table} == {
        ("RequestTelemetry", 12.1, 16.0), ("tracing: OTLP, 1 % sampled", 25.0, 37.0)}
    text = markdown({"rows": rows(FIGURES), "latency": [("waiting room opening: position polls", 3.5, 40.0)],
                     "cpu_per_request": table, "plots": [], "load": {}})
    assert "| tracing: OTLP, 1 % sampled | hot route (HotPaths) | +25.0 | 37.0 |" in text
    assert "| waiting room: joins: capacity (wrk) | 1,500 req/s |" in text
    assert "| waiting room opening: position polls | 3.5 | 40.0 |" in text


def test_each_benchmark_states_how_fast_the_machine_was_beside_how_busy() -> None:
    figure = cpu_speed()
    assert 0 < figure["min_ms"] <= figure["median_ms"] <= figure["max_ms"]
    load = {"holds": {"before": [1.0, 1.2, 1.5], "after": [2.0, 1.4, 1.5], "speed_before": figure,
                      "speed_after": {"median_ms": 61.2, "min_ms": 55.0, "max_ms": 70.4}},
            "queue": {"before": [0.5, 0.5, 0.5], "after": [0.6, 0.5, 0.5]}}  # written before the probe existed
    text = markdown({"rows": [], "latency": [], "cpu_per_request": [], "plots": [], "load": load})
    assert f"| holds | [1.0, 1.2, 1.5] | [2.0, 1.4, 1.5] | {figure['median_ms']:.0f} " in text
    assert "| 61 (55-70) |" in text
    assert "| queue | [0.5, 0.5, 0.5] | [0.6, 0.5, 0.5] | - | - |" in text


def test_the_relay_and_normal_vouchers_stand_beside_limits_measured_in_their_own_runs() -> None:
    figures = {"limits": {"pg_voucher_row": {"tps": 9000}, "kafka_producer": {"messages_per_s": 90000}},
               "outbox": {"relay_events_per_s": 9000, "producer_alone_per_s": 10000},
               "vouchers": {"points": [{"mode": "normal", "concurrency": 32, "req_per_s": 900,
                                        "pgbench_hot_row_tps": 2000},
                                       {"mode": "normal", "concurrency": 64, "req_per_s": 1200,
                                        "pgbench_hot_row_tps": 1500},
                                       {"mode": "flash", "concurrency": 64, "req_per_s": 4000}]}}
    by_name = {r["figure"]: r for r in rows(figures)}
    relay = by_name["outbox relay: events/s"]
    assert (relay["limit_value"], relay["ratio"]) == (10000, 0.9)
    normal = by_name["vouchers, normal mode: best req/s (one hot row)"]
    assert (normal["value"], normal["limit_value"], normal["ratio"]) == (1200, 1500, 0.8)


def test_the_door_s_check_ins_stand_beside_a_bare_endpoint_of_the_same_run() -> None:
    figures = {"checkins": {"bare": {"per_s": 10000}, "first": {"per_s": 500}, "batch_scans": {"per_s": 800}}}
    by_name = {r["figure"]: r for r in rows(figures)}
    first = by_name["door check-ins, first scans: admissions/s"]
    synced = by_name["door check-ins, offline scans synced: admissions/s"]
    assert (first["value"], first["limit_value"], first["ratio"]) == (500, 10000, 0.05)
    assert (synced["value"], synced["ratio"]) == (800, 0.08)


def test_granted_and_sustained_holds_stand_beside_their_sql_and_the_database_limit() -> None:
    figures = {"limits": {"pg_hold_update": {"tps": 4000}},
               "granted": {"median": {"service_per_s": 1800, "replay_per_s": 600, "bare_per_s": 9000,
                                      "bare+showtime_per_s": 2700, "bare+notify_per_s": 3000,
                                      "bare+both_per_s": 1800}},
               "sustained": {"best_sustained_per_s": 400}}
    by_name = {r["figure"]: r for r in rows(figures)}
    service = by_name["granted holds: service, one fresh seat per hold (bench-granted)"]
    assert (service["value"], service["limit_value"], service["ratio"]) == (1800, 600, 3.0)
    assert by_name["granted holds: pgbench replay of one hold's statements"]["ratio"] == 0.067
    both = by_name["pgbench: the bare UPDATE with the showtime's row and a NOTIFY to its COMMIT"]
    assert (both["value"], both["ratio"]) == (1800, 0.2)
    sustained = by_name["sustained granted holds/s, every consumer caught up (bench-sustained)"]
    assert (sustained["value"], sustained["limit_value"], sustained["ratio"]) == (400, 4000, 0.1)
