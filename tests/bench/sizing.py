"""The sizing model of docs/scaling.md: the figures `make bench` measured here (var/bench/*.json) turned into
what an opening of RPS requests/s on SHOWTIMES hot showtimes needs: API cores, Redis masters, the relay and
PostgreSQL. It prints the table docs/scaling.md shows.

    .venv/bin/python tests/bench/sizing.py [--rps 50000] [--showtimes 3] [--no-room]

Per core = a benchmark's capacity on this 2-core machine divided by 2, although the load generator, PostgreSQL
and Redis used part of those cores: the model errs on the side of more cores. The request mix behind the waiting
room (MIX) is an assumption, printed with the result; --no-room is the worst case: every request a hold attempt.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from results import read_all

CORES = 2  # of the machine the figures come from
API_TARGET = 0.65  # the share of a core the API pods are sized for (the HPA's target)
REDIS_TARGET = 0.5  # of a Redis master's one core: room for skew between slots and a failover's catch-up
# An opening behind the waiting room: customers poll their place, read the seat map (mostly 304s), join once,
# and once admitted try holds, most of them refused by the gate (a few hundred seats per showtime).
MIX = {"poll": 0.60, "seat_map": 0.25, "join": 0.05, "hold": 0.10}
# Redis script runs per request before batching (a hold: its customer's limit, its address's limit and the
# gate; a poll or a join: one room script; the seat map: none, it is served from the process).
SCRIPTS = {"poll": 1, "join": 1, "hold": 3, "seat_map": 0}
HOT_SLOT = {"poll": 1, "join": 1, "hold": 1, "seat_map": 0}  # of those, in the showtime's slot: one master
SEATS = 300  # per showtime
TX_PER_SEAT_SOLD = 4  # hold 1.5 (bench-selloff), then per booking of ~2 seats: checkout, callback, confirmation,
#                       consumers' inbox rows, e-mail, outbox marks: ~5 more
EVENTS_PER_SEAT_SOLD = 3  # SeatsHeld, CheckoutStarted, PaymentSucceeded, BookingConfirmed... per booking of ~2 seats


def figure(b: dict[str, Any], *path: str) -> float:
    value: Any = b
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise SystemExit(f"var/bench has no {'.'.join(path)}: run its benchmark (make bench) first")
        value = value[key]
    return float(value)


def per_core(b: dict[str, Any]) -> dict[str, float]:
    """Requests/s one core of hold-service answers, per kind (the API's 2 workers on 2 cores, halved)."""
    return {"poll": figure(b, "queue", "poll", "per_s") / CORES, "join": figure(b, "queue", "join", "per_s") / CORES,
            "seat_map": figure(b, "seatmap", "reads", "capacity_per_s", "seat map, 304") / CORES,
            "hold": figure(b, "holds", "gate_on", "capacity_per_s") / CORES}


def model(b: dict[str, Any], rps: float, showtimes: int, mix: dict[str, float]) -> list[tuple[str, str]]:
    rate = {kind: rps * share for kind, share in mix.items()}
    core = per_core(b)
    busy = {kind: r / core[kind] for kind, r in rate.items()}
    balancer = figure(b, "cluster", "per_s", "hold-service, one instance via HAProxy") / \
        figure(b, "cluster", "per_s", "hold-service, one instance, direct")
    api = sum(busy.values()) / min(1.0, balancer) / API_TARGET
    master = figure(b, "limits", "redis_gate_script", "calls_per_s")
    calls = sum(r * SCRIPTS[k] for k, r in rate.items())
    hot = sum(r * HOT_SLOT[k] for k, r in rate.items()) / showtimes
    masters = max(3, math.ceil(calls / (master * REDIS_TARGET)))
    sold_per_s = SEATS * showtimes / 60  # every seat of the hot showtimes sold within a minute
    relay, pg = figure(b, "outbox", "relay_events_per_s"), figure(b, "limits", "pg_hold_update", "tps")
    gate_share = figure(b, "holds", "gate_on", "gate_share")
    pg_attempts = rate.get("hold", 0) * (1 - gate_share)  # the attempts the gate lets through
    return [
        ("requests", f"{rps:,.0f}/s on {showtimes} showtimes: "
         + ", ".join(f"{k} {r:,.0f}/s" for k, r in rate.items())),
        ("per core (measured)", ", ".join(f"{k} {c:,.0f}/s" for k, c in core.items())
         + f"; HAProxy in front: x{balancer:.2f}"),
        ("hold-service API", f"{sum(busy.values()):.1f} busy cores ("
         + ", ".join(f"{k} {c:.1f}" for k, c in busy.items()) + f"): {math.ceil(api)} cores at {API_TARGET:.0%}"),
        ("Redis", f"{calls:,.0f} script runs/s before batching; {masters} masters with a replica each "
                  f"({calls / masters / master:.0%} of a master); one hot showtime's slot {hot:,.0f}/s = "
                  f"{hot / master:.0%} of its master ({hot * showtimes / master:.0%} if all {showtimes} share one)"),
        ("PostgreSQL", f"{pg_attempts:,.0f} hold attempts/s past the gate ({1 - gate_share:.1%}) + "
                       f"{sold_per_s * TX_PER_SEAT_SOLD:,.0f} tx/s selling {sold_per_s:,.0f} seats/s = "
                       f"{(pg_attempts + sold_per_s * TX_PER_SEAT_SOLD) / pg:.0%} of this machine's {pg:,.0f} tps"),
        ("relay", f"{sold_per_s * EVENTS_PER_SEAT_SOLD:,.0f} events/s = "
                  f"{sold_per_s * EVENTS_PER_SEAT_SOLD / relay:.1%} of one leader's {relay:,.0f}/s"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rps", type=float, default=50_000)
    parser.add_argument("--showtimes", type=int, default=3)
    parser.add_argument("--no-room", action="store_true", help="every request a hold attempt")
    args = parser.parse_args()
    for what, value in model(read_all(), args.rps, args.showtimes, {"hold": 1.0} if args.no_room else MIX):
        print(f"{what:20s} {value}")


if __name__ == "__main__":
    main()
