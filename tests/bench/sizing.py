"""The sizing model of docs/scaling.md: the figures `make bench` measured here (var/bench/*.json) turned into
what an opening of RPS requests/s on SHOWTIMES hot showtimes needs: API cores and pods, Redis masters,
relay and consumer replicas, Kafka partitions, PostgreSQL.

    .venv/bin/python tests/bench/sizing.py [--rps 50000] [--showtimes 3] [--no-room]

Every per-core figure is a benchmark's capacity on this 2-core machine divided by 2, although the load
generator, PostgreSQL and Redis took part of those cores: the model errs on the side of more cores. The request
mix of an opening behind the waiting room (MIX) is an assumption, printed with the result; --no-room is the
worst case of every request a hold attempt.
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
TARGET = 0.65  # utilisation the API pods are sized for (the HPA's target)
REDIS_TARGET = 0.5  # of a Redis master's single core: room for a failover's catch-up and a slot's skew
# An opening behind the waiting room: customers poll their place, read the seat map (mostly 304 or the
# stream), join once, try holds once admitted (mostly refused by the gate: a few hundred seats), check out.
MIX = {"poll": 0.60, "seat_map": 0.20, "join": 0.05, "hold": 0.12, "checkout": 0.02, "flash_voucher": 0.01}
# Redis script calls per request, before any batching (holds: the customer's limit, the address's limit, the
# gate; polls and joins: one room script; a flash reservation: the reserve script and the sent mark).
REDIS_CALLS = {"poll": 1, "join": 1, "hold": 3, "flash_voucher": 2}
# ... of which in the hot showtime's (or voucher's) slot: on one master whatever the number of masters.
HOT_SLOT_CALLS = {"poll": 1, "join": 1, "hold": 1}
EVENTS_PER_BOOKING = 5  # SeatsHeld, CheckoutStarted, PaymentSucceeded, BookingConfirmed, and an expiry's share
TX_PER_BOOKING = 12  # hold, checkout, callback, confirmation, the consumers' inbox rows, outbox marks, e-mail


def need(b: dict[str, Any], *path: str) -> float:
    value: Any = b
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise SystemExit(f"var/bench has no {'.'.join(path)}: run `make bench` (or that benchmark) first")
        value = value[key]
    return float(value)


def per_core(b: dict[str, Any]) -> dict[str, float]:
    """req/s one API core answers, per kind of request."""
    flash = max((p["req_per_s"] for p in b.get("vouchers", {}).get("points", []) if p["mode"] == "flash"), default=0)
    if not flash:
        raise SystemExit("var/bench/vouchers.json has no flash point: run bench_vouchers first")
    return {"poll": need(b, "queue", "poll", "per_s") / CORES, "join": need(b, "queue", "join", "per_s") / CORES,
            "seat_map": need(b, "seatmap", "reads", "not_modified", "capacity_per_s") / CORES,
            "hold": need(b, "holds", "gate_on", "capacity_per_s") / CORES,
            "checkout": need(b, "holds", "gate_on", "capacity_per_s") / CORES / 4,  # see docs/scaling.md
            "flash_voucher": flash / CORES}


def model(b: dict[str, Any], rps: float, showtimes: int, mix: dict[str, float]) -> list[tuple[str, str, str]]:
    rates = {kind: rps * share for kind, share in mix.items()}
    cores = {kind: rate / per_core(b)[kind] for kind, rate in rates.items()}
    balancer = 1 - need(b, "cluster", "balancer_cost_one_instance")
    api = sum(cores.values()) / min(1.0, balancer) / TARGET
    redis_calls = need(b, "limits", "redis_gate_script", "calls_per_s")
    calls = sum(rates[k] * REDIS_CALLS.get(k, 0) for k in rates)
    hot = sum(rates[k] * HOT_SLOT_CALLS.get(k, 0) for k in rates) / showtimes
    masters = max(3, math.ceil(calls / (redis_calls * REDIS_TARGET)))
    bookings = min(rates.get("checkout", 0), 900 * showtimes / 60)  # a showtime's seats sell in about a minute
    relay = need(b, "outbox", "relay_events_per_s")
    pg_tps = need(b, "limits", "pg_hold_update", "tps")
    return [
        ("request mix", ", ".join(f"{k} {v:.0%}" for k, v in mix.items()), "assumed (--no-room: all holds)"),
        ("API cores", f"{api:.0f} cores at {TARGET:.0%}: " + ", ".join(f"{k} {c:.1f}" for k, c in cores.items()),
         f"per core: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in per_core(b).items())),
        ("Redis calls", f"{calls:,.0f} script calls/s; {hot:,.0f}/s in one hot showtime's slot "
                        f"({hot / redis_calls:.0%} of a master, {hot * showtimes / redis_calls:.0%} if all "
                        f"{showtimes} hash to one)", f"one master: {redis_calls:,.0f} gate-script calls/s"),
        ("Redis masters", f"{masters} masters with a replica each ({calls / masters / redis_calls:.0%} busy)",
         f"at most {REDIS_TARGET:.0%} of a master's core"),
        ("relay", f"{bookings * EVENTS_PER_BOOKING:,.0f} events/s at most, one leader per service "
                  f"({bookings * EVENTS_PER_BOOKING / relay:.1%} of one)", f"one relay: {relay:,.0f} events/s"),
        ("PostgreSQL", f"{bookings * TX_PER_BOOKING:,.0f} tx/s for {bookings:,.0f} bookings/s "
                       f"({bookings * TX_PER_BOOKING / pg_tps:.1%} of this machine's hold UPDATE tps)",
         f"pgbench: hold UPDATE {pg_tps:,.0f} tps, one hot row {need(b, 'limits', 'pg_voucher_row', 'tps'):,.0f}"
         " tps"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rps", type=float, default=50_000)
    parser.add_argument("--showtimes", type=int, default=3)
    parser.add_argument("--no-room", action="store_true", help="every request a hold attempt")
    args = parser.parse_args()
    mix = {"hold": 1.0} if args.no_room else MIX
    for what, value, basis in model(read_all(), args.rps, args.showtimes, mix):
        print(f"{what:14s} {value}\n{'':14s} ({basis})")


if __name__ == "__main__":
    main()
