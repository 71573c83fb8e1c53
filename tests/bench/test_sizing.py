"""The sizing model (tests/bench/sizing.py, docs/scaling.md) turns measured figures into cores, Redis masters and
load on PostgreSQL and the relay; the bench report sets bench-cluster's figures beside the instance reached
directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import each other by module name
from report import rows
from sizing import MIX, model

FIGURES = {
    "queue": {"poll": {"per_s": 10_000}, "join": {"per_s": 6_000}},
    "seatmap": {"reads": {"capacity_per_s": {"seat map, 304": 12_000}}},
    "holds": {"gate_on": {"capacity_per_s": 8_000, "gate_share": 0.98}},
    "cluster": {"per_s": {"hold-service, one instance, direct": 7_000, "hold-service, one instance via HAProxy": 7_000,
                          "hold-service, two instances via HAProxy": 6_650}},
    "limits": {"redis_gate_script": {"calls_per_s": 60_000}, "pg_hold_update": {"tps": 10_000}},
    "outbox": {"relay_events_per_s": 10_000},
}


def test_every_request_a_hold_attempt() -> None:
    got = dict(model(FIGURES, 50_000, 3, {"hold": 1.0}))
    # 50,000 / (8,000 / 2) = 12.5 busy cores; at 65 %: 20 cores
    assert got["hold-service API"].startswith("12.5 busy cores") and ": 20 cores at 65%" in got["hold-service API"]
    # 3 script runs per attempt: 150,000/s; masters at half of 60,000 each: 5; one showtime 16,667/s = 28 %
    assert "150,000 script runs/s" in got["Redis"] and "5 masters" in got["Redis"]
    assert "16,667/s = 28% of its master (83% if all 3 share one)" in got["Redis"]
    # 2 % of 50,000 past the gate + 15 seats/s x 4 tx = 1,060 of 10,000 tps
    assert got["PostgreSQL"].startswith("1,000 hold attempts/s past the gate (2.0%)")
    assert "= 11% of" in got["PostgreSQL"]


def test_behind_the_waiting_room_the_mix_is_printed_with_the_result() -> None:
    got = dict(model(FIGURES, 50_000, 3, MIX))
    assert got["requests"] == "50,000/s on 3 showtimes: poll 30,000/s, seat_map 12,500/s, join 2,500/s, hold 5,000/s"
    assert "poll 6.0, seat_map 2.1, join 0.8, hold 1.2" in got["hold-service API"]


def test_a_missing_figure_names_its_benchmark() -> None:
    with pytest.raises(SystemExit, match=r"queue\.poll\.per_s"):
        model({**FIGURES, "queue": {}}, 50_000, 3, MIX)


def test_the_report_sets_the_balanced_holds_beside_the_instance_reached_directly() -> None:
    by_name = {r["figure"]: r for r in rows(FIGURES)}
    two = by_name["POST holds, two instances via HAProxy: capacity (wrk)"]
    assert (two["value"], two["limit_value"], two["ratio"]) == (6_650, 7_000, 0.95)
