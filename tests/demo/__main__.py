"""`make demo`: a flash sale anyone can watch, with a live terminal dashboard and a CHECKED closing table.

    make up && make demo                                     # against make up's ports (8001-8004, 8010, 1025)
    make demo ARGS='--customers 4000 --seats 150 --waiting-room'   # flags: make demo ARGS=--help
    make demo ARGS='--waiting-room auto'                     # no operator action: the rooms open themselves

Thousands of simulated customers race for a few showtimes through the public API only; each plays one
part: pays, pays twice, pays late, declines then retries, abandons; some bring a flash voucher of a small
limit (sale.py). They play in as many processes as the machine has cores (crowd.py), from many loopback
addresses, a few customers to each (addresses.py), as hold-service's per-address limit expects of a crowd.
The sale runs until
every seat is BOOKED, or until the --seconds limit (the table names it); then the saga checker
(tests/e2e/saga) waits for rest and judges every invariant over the four schemas, the topic, the gateway
and the mail; the closing table's rows are checks (table.py), and each step's p50 / p99 stands as the
customers saw it beside what the services measured (their /metrics), with the generator's own event-loop
lag to say whether it was saturated.

Exit status: 0 every check passed, 1 a check failed, 2 the sale could not run (platform down, no waiting room).
The table, the per-step figures and the history go to var/log/demo/<time>/ (report.json, history.jsonl).

It lives under tests/ because it is built from the end-to-end harness (stack.py to start the platform
when `make up` is not running, the customers and journeys of the saga run, the checker) and ships in no
service; `make test` runs it at a small size on its own stack (test_demo.py) and on `make up`
(deploy/tests/readme_path.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from rich.console import Console
from rich.live import Live

from ..e2e.saga import check
from .addresses import BLOCK_HOSTS, addresses_needed
from .best import best_row, refusals_per_booking
from .crowd import CrowdFailed, LoopLag, run_sale
from .dashboard import render
from .figures import Measures
from .platform import DEMO_HOLD_TTL, ROOT, Platform, demo_timings, end_offsets, make_up, make_up_running, own_stack
from .queue import RoomMissing, wait_rooms_closed
from .sale import Sale, SaleConfig, admin_headers
from .table import SaleTable, judge, rooms_changed, rooms_row

LOGS = ROOT / "var" / "log" / "demo"
BUSY_CORE = 0.8  # a customer process using this share of a core is busy with its own work


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, SaleConfig]:
    d = SaleConfig()
    p = argparse.ArgumentParser(prog="make demo ARGS='...' | python -m tests.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--customers", type=int, default=d.customers, help="simulated customers (%(default)s)")
    p.add_argument("--showtimes", type=int, default=d.showtimes, help="showtimes on sale (%(default)s)")
    p.add_argument("--seats", type=int, default=d.seats, help="seats per showtime (%(default)s)")
    p.add_argument("--seconds", type=float, default=d.seconds,
                   help="the limit: no journey starts after this; the sale ends sooner once sold out (%(default)s)")
    p.add_argument("--arrival-seconds", type=float, default=d.arrival_seconds,
                   help="customers arrive spread over this (%(default)s)")
    p.add_argument("--voucher-limit", type=int, default=d.voucher_limit, help="flash voucher uses (%(default)s)")
    p.add_argument("--waiting-room", nargs="?", const="on", choices=("on", "auto"),
                   help="on (the flag alone): every showtime behind a waiting room the operator turns on; auto: no "
                        "operator action, each showtime's room opens itself at the rush and closes after (its "
                        "thresholds: hold-service's WAITING_ROOM_AUTO_* settings)")
    p.add_argument("--active-limit", type=int, default=d.active_limit,
                   help="customers choosing seats at once per showtime, with --waiting-room (%(default)s)")
    p.add_argument("--connections", type=int, default=d.connections,
                   help="HTTP connections, all customer processes together (%(default)s)")
    p.add_argument("--customers-per-address", type=int, default=d.customers_per_address,
                   help="customers sharing one loopback source address at most (%(default)s); hold-service "
                        "limits holds per address as deployed")
    p.add_argument("--processes", type=int, default=d.processes,
                   help="customer processes (default: one per core)")
    p.add_argument("--best-share", type=float, default=d.best_share,
                   help="share of customers who ask for the best seats available instead of picking (%(default)s)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--platform", choices=("auto", "make-up", "own"), default="auto",
                   help="make up's ports, a stack of its own (stack.py, test database), or make up if it answers")
    p.add_argument("--hold-ttl", type=float, default=DEMO_HOLD_TTL,
                   help="HOLD_TTL_SECONDS of a stack of its own (%(default)s; make up keeps its own)")
    p.add_argument("--rest-timeout", type=float, default=120.0, help="seconds to wait for the saga to rest")
    p.add_argument("--rooms-timeout", type=float, default=600.0,
                   help="--waiting-room auto: seconds to wait after the sale for the rooms to close themselves "
                        "(%(default)s; a room closes once its queue drained and its rush has been over "
                        "WAITING_ROOM_AUTO_CLOSE_AFTER_SECONDS, 120 on make up)")
    p.add_argument("--report", type=Path, help="where to write report.json (default var/log/demo/<time>/)")
    p.add_argument("--plain", action="store_true", help="a progress line every few seconds, no live dashboard")
    a = p.parse_args(argv)
    if a.customers_per_address < 1 or addresses_needed(a.customers, a.customers_per_address) > BLOCK_HOSTS:
        p.error(f"--customers-per-address: at least 1, and at most {BLOCK_HOSTS} addresses in all")
    cfg = SaleConfig(customers=a.customers, showtimes=a.showtimes, seats=a.seats, seconds=a.seconds,
                     arrival_seconds=a.arrival_seconds, voucher_limit=a.voucher_limit,
                     waiting_room=a.waiting_room == "on", room_auto=a.waiting_room == "auto",
                     active_limit=a.active_limit, connections=a.connections, processes=a.processes, seed=a.seed,
                     best_share=a.best_share,
                     customers_per_address=a.customers_per_address)
    return a, cfg


async def demo(platform: Platform, cfg: SaleConfig, console: Console, plain: bool,
               rest_timeout: float, rooms_timeout: float) -> tuple[Sale, SaleTable]:
    offsets = await end_offsets(platform.bootstrap)
    sale = Sale(cfg=cfg, platform=platform)
    measures = Measures(sale.history)
    last_line = [0.0]

    def progress_line() -> None:
        measures.read()
        now = time.monotonic()
        if now - last_line[0] >= 5 and sale.started:
            last_line[0] = now
            held = sum(c.held for c in sale.seats.values())
            free = sum(c.available for c in sale.seats.values())
            console.print(f"t={now - sale.started:5.1f}s sold {sale.booked()}/{cfg.capacity} held {held} free {free}"
                          f" | customers {sale.arrived} arrived {sale.shopping} shopping | "
                          f"{measures.per_second(now - sale.history.t0):.0f} req/s")

    opened_at = datetime.now(UTC)
    if plain:
        await run_sale(sale, progress_line)
    else:
        with Live(render(sale, measures), console=console, refresh_per_second=4, transient=False) as live:
            def tick() -> None:
                measures.read()
                live.update(render(sale, measures))
            await run_sale(sale, tick)
    measures.read()
    console.print(f"sale over: {sale.ending}; waiting for the saga to rest and checking it ...")
    if cfg.room_auto:  # the rooms close themselves once their rush has been over a while: wait for it
        async with httpx.AsyncClient() as client:
            waited, rooms = await wait_rooms_closed(client, platform.url["hold"], admin_headers(platform),
                                                    sorted(sale.catalogue.showtimes), rooms_timeout)
        sale.rooms.update(rooms)
        console.print(f"waited {waited:.0f} s for the waiting rooms to close themselves")
    verdict = await check(sale.scope, platform.sources(offsets), sale.history, rest_timeout=rest_timeout)
    late = [{"payment_ids": j.payment_ids} for j in sale.history.journeys.values()
            if j.scenario == "pays late" and j.payment_ids]  # the attempts that got as far as a checkout
    table = judge(verdict, capacity=cfg.capacity, voucher=sale.voucher, voucher_limit=cfg.voucher_limit,
                  late_journeys=late, steps=measures.steps(), expiry_plays=sale.expiry_plays, hold_ttl=sale.hold_ttl,
                  ended=sale.ending, server=sale.server, generator=generator_figures(sale.lags, sale.server_unread),
                  addresses=sale.addresses, refused=sale.refused)
    table.rows.append(best_row(refusals_per_booking(sale.history, verdict.facts), cfg.best_share))
    if cfg.room_auto or rooms_changed(verdict.facts):  # without --waiting-room auto: a figure, if any opened
        table.rows.append(rooms_row(verdict.facts, sorted(sale.catalogue.showtimes), opened_at, check=cfg.room_auto))
    table.facts.update({"platform": platform.name, "customers": cfg.customers, "parts": dict(sale.parts),
                        "capacity": cfg.capacity, "hold_ttl_s": round(sale.hold_ttl, 1),
                        "sale_seconds": round(sale.ended - sale.started, 1), "sold_out": sale.sold_out.is_set(),
                        "showtimes": sorted(sale.catalogue.showtimes), "voucher": sale.voucher,
                        "stack_started_in_s": round(platform.started_in, 1), "saga_report": verdict.report(),
                        "rooms": {str(showtime): room for showtime, room in sale.rooms.items()},
                        "processes": len(sale.lags), "loop_lag": [vars(lag) for lag in sale.lags],
                        "generator_saturated": any(lag.saturated for lag in sale.lags),
                        "addresses": len(sale.addresses), "customers_per_address": max(sale.addresses.values(),
                                                                                       default=0),
                        "address_block": f"127.{sale.block.octet}.0.0/16", "refused_by_limit": sale.refused})
    return sale, table


def generator_figures(lags: list[LoopLag], unread: list[str]) -> str:
    """The load generator's row: its processes, their event-loop lag and CPU, saturated or not."""
    if not lags:
        return "no customer process reported"
    worst = max(lags, key=lambda lag: lag.p99_ms)
    text = (f"{len(lags)} customer processes; event-loop lag p50 {worst.p50_ms:.1f} ms, p99 {worst.p99_ms:.1f} ms, "
            f"max {max(lag.max_ms for lag in lags):.0f} ms (the worst process); CPU "
            + ", ".join(f"{lag.cpu_share:.0%}" for lag in lags) + " of a core each: "
            + _verdict(worst))
    waits = max(lags, key=lambda lag: lag.slot_wait_p99_ms)
    text += (f"; browsing calls waited for one of its connections p50 {waits.slot_wait_p50_ms:.0f} ms, p99 "
             f"{waits.slot_wait_p99_ms:.0f} ms" + (" (answers came slower than the herd asked: it queued here, "
                                                     "beyond --connections)" if waits.slot_wait_p99_ms >= 1000 else ""))
    return text + (f"; no /metrics from {', '.join(unread)}" if unread else "")


def _verdict(lag: LoopLag) -> str:
    if not lag.saturated:
        return "not saturated"
    if lag.cpu_share >= BUSY_CORE:
        return "SATURATED by its own work: the customer-side figures include its wait"
    return "LAGGING while its CPU was low (the machine kept it waiting): the customer-side figures include that"


def main(argv: list[str] | None = None) -> int:
    args, cfg = parse(argv)
    console = Console()
    run_dir = LOGS / time.strftime("%Y%m%d-%H%M%S")
    report = args.report or run_dir / "report.json"
    use_make_up = args.platform == "make-up" or (args.platform == "auto" and make_up_running())
    if args.platform == "make-up" and not make_up_running():
        console.print("[red]make up is not answering on 8001-8003: run `make up` first, or --platform own[/red]")
        return 2
    try:
        if use_make_up:
            sale, table = asyncio.run(demo(make_up(), cfg, console, args.plain, args.rest_timeout,
                                             args.rooms_timeout))
        else:
            console.print("make up is not running: starting a stack of its own (tests/e2e/stack.py, test database)")
            with own_stack(run_dir / "stack", demo_timings(args.hold_ttl)) as platform:
                console.print(f"stack ready in {platform.started_in:.0f} s")
                sale, table = asyncio.run(demo(platform, cfg, console, args.plain, args.rest_timeout,
                                                 args.rooms_timeout))
    except RoomMissing as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    except CrowdFailed as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    sale.history.dump(report.parent / "history.jsonl")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(table.to_json())
    console.print(table.render())
    console.print(table.render_steps())
    console.print(f"report: {report}")
    if table.failed:
        console.print(table.facts["saga_report"])
        console.print(f"[bold red]{len(table.failed)} check(s) failed[/bold red]:")
        for r in table.failed:
            console.print(f"  FAIL {r.check}: {r.figure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
