"""The customers in as many processes as the machine has cores, and the run of the sale around them.

One Python process cannot play thousands of customers and measure them too: its event loop falls behind, and
every latency it records then includes the time the answer waited for the loop. So the customers are dealt
to worker processes (spawned, one event loop each). Each records its customers' calls in a History of its
own, on the clock every process of the machine shares (time.monotonic), and sends what it recorded to this
process a few times a second; here they are merged for the dashboard, the checker and the closing table.

Each customer's calls go out from his own loopback address (addresses.py), at most --customers-per-address
customers to one, so hold-service's per-address limits see a crowd, not one client.

Each worker also samples its event loop's lag (how late a 50 ms sleep wakes up) and its CPU: a loop that
lags tens of milliseconds means the customer-side figures are partly the generator's, and the table says so
beside the services' own figures (server_figures.py).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue as stdlib_queue
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx

from ..e2e.customers import KEEPALIVE_EXPIRY, Catalogue, Shop
from ..e2e.saga.history import History
from . import server_figures
from .addresses import Clients, deal
from .ending import SaleEnd
from .figures import percentile
from .platform import Platform
from .sale import PARTS, Sale, SaleConfig, SeatCounts, cast_for, open_sale, read_seats, watch
from .shoppers import SaleCustomer, shop_until_served

LAG_PROBE_SECONDS = 0.05
MONITOR_LIMITS = httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY)
SATURATED_LAG_MS = 20.0  # a loop this late at p99 adds about that much to what its customers measure
REPORT_SECONDS = 0.25
JOURNEYS_PER_WORKER = 10**7  # journey ids of worker w start at w * this
# Connections an address keeps open between calls, per customer of it: the service he calls and the one he called
# last, as his browser would. Fewer, and its pool closes a connection and opens another for almost every call.
KEEPALIVE_PER_CUSTOMER = 2


@dataclass(frozen=True)
class Plan:
    """What one worker process plays: its customers (index, id, part, arrival in seconds after the start,
    source address)."""

    worker: int
    cfg: SaleConfig
    platform: Platform  # without its stack (a stack is the parent's)
    catalogue: Catalogue
    voucher: str
    customers: tuple[tuple[int, int, str, float, str], ...]
    hold_ttl: float
    expiry_plays: bool
    t0: float


@dataclass
class LoopLag:
    """One worker's event loop: how late its probe's sleeps woke up, and its CPU over the run."""

    worker: int
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu_share: float  # CPU seconds / wall seconds of the process
    slot_wait_p50_ms: float = 0.0  # browsing calls' wait for one of the process's connections
    slot_wait_p99_ms: float = 0.0

    @property
    def saturated(self) -> bool:
        return self.p99_ms >= SATURATED_LAG_MS


def plans(sale: Sale) -> list[Plan]:
    """Deal the customers to the workers: each a part and an arrival drawn from the seed, and an address of
    the run's block (`sale.addresses` counts the customers of each)."""
    cfg = sale.cfg
    rng = random.Random(f"{cfg.seed}:cast")
    cast = [cast_for(rng) for _ in sale.customers]
    sale.parts.update(p.name for p in cast)
    arrivals = [rng.uniform(0, cfg.arrival_seconds) for _ in sale.customers]
    everyone = [(i, c, part.name, at) for i, (c, part, at) in enumerate(zip(sale.customers, cast, arrivals,
                                                                            strict=True))]
    dealt = [everyone[w::cfg.workers] for w in range(cfg.workers)]
    addresses = deal(sale.block, [len(customers) for customers in dealt], cfg.customers_per_address)
    sale.addresses.update(a for own in addresses for a in own)
    platform = replace(sale.platform, stack=None)
    return [Plan(worker=w, cfg=cfg, platform=platform, catalogue=sale.catalogue, voucher=sale.voucher,
                 customers=tuple((*c, a) for c, a in zip(dealt[w], addresses[w], strict=True)),
                 hold_ttl=sale.hold_ttl, expiry_plays=sale.expiry_plays, t0=sale.history.t0)
            for w in range(cfg.workers)]


# ---------------------------------------------------------------- in a worker process

def work(plan: Plan, out: Any, start: Any, stop: Any, end: SaleEnd) -> None:
    """The worker process: once `start` is set (a synchronized Value: the sale's start on the shared clock,
    0 until then), play the plan's customers, reporting to `out` until done; `end`: the sale's sold-out
    decision, shared by the processes (ending.py)."""
    try:
        asyncio.run(_work(plan, out, start, stop, end))
    except BaseException:
        out.put(("error", plan.worker, traceback.format_exc()))
        raise


async def _work(plan: Plan, out: Any, start: Any, stop: Any, end: SaleEnd) -> None:
    cfg = plan.cfg
    connections = max(1, cfg.connections // cfg.workers)
    sale = Sale(cfg=cfg, platform=plan.platform, history=History(t0=plan.t0,
                                                                 journey_base=plan.worker * JOURNEYS_PER_WORKER),
                catalogue=plan.catalogue, voucher=plan.voucher, hold_ttl=plan.hold_ttl,
                expiry_plays=plan.expiry_plays, stop=stop, end=end,
                in_flight=asyncio.Semaphore(connections))
    sale.seats = {showtime: SeatCounts(available=len(seats)) for showtime, seats in plan.catalogue.showtimes.items()}
    clients = Clients(keepalive=KEEPALIVE_PER_CUSTOMER * cfg.customers_per_address)
    for address in sorted({address for *_, address in plan.customers}):
        clients.of(address)
    reporter = Reporter(sale, plan.worker, out)
    reporter.send("ready")  # the interpreter and the harness are loaded: the parent starts the sale
    while not start.value:
        await asyncio.sleep(0.01)
    sale.started = start.value
    sale.deadline = sale.started + cfg.seconds
    lags: list[float] = []
    began, cpu = time.monotonic(), time.process_time()
    async with clients, httpx.AsyncClient(timeout=10, limits=MONITOR_LIMITS) as monitor:
        # Holds last at most a minute for a customer's patience (a decline waits that long to show FAILED).
        # The shop's client is the monitor's: every customer calls through his own address's (SaleCustomer).
        shop = Shop(url=plan.platform.url, client=monitor, history=sale.history,
                    jwt_secret=plan.platform.jwt_secret, hold_ttl=min(max(plan.hold_ttl, 5.0), 60.0))
        shop.wave = plan.catalogue
        helpers = [asyncio.create_task(watch(sale, monitor, rooms=False)), asyncio.create_task(_probe(lags)),
                   asyncio.create_task(reporter.run())]
        try:
            await asyncio.gather(*(shop_until_served(sale, SaleCustomer(sale, shop, index, customer,
                                                                        clients.of(address)),
                                                     PARTS[part], sale.started + arrival)
                                   for index, customer, part, arrival, address in plan.customers))
        finally:
            for task in helpers:
                task.cancel()
    ordered, waits = sorted(lags), sorted(sale.slot_waits)
    lag = LoopLag(plan.worker, len(ordered), percentile(ordered, 50) * 1000, percentile(ordered, 99) * 1000,
                  (ordered[-1] if ordered else 0.0) * 1000,
                  (time.process_time() - cpu) / max(1e-9, time.monotonic() - began),
                  percentile(waits, 50) * 1000, percentile(waits, 99) * 1000)
    reporter.send("done", journeys=list(sale.history.journeys.values()), lag=lag)


async def _probe(lags: list[float]) -> None:
    while True:
        asked = time.monotonic()
        await asyncio.sleep(LAG_PROBE_SECONDS)
        lags.append(max(0.0, time.monotonic() - asked - LAG_PROBE_SECONDS))


@dataclass
class Reporter:
    """Sends the calls recorded since the last report, and the customers' counts, a few times a second."""

    sale: Sale
    worker: int
    out: Any
    sent: int = 0

    def send(self, kind: str, **more: Any) -> None:
        ops = self.sale.history.ops[self.sent:]
        self.sent += len(ops)
        self.out.put((kind, self.worker, {"ops": ops, "counts": (self.sale.arrived, self.sale.shopping,
                                                                 self.sale.done), **more}))

    async def run(self) -> None:
        while True:
            await asyncio.sleep(REPORT_SECONDS)
            self.send("progress")


# ---------------------------------------------------------------- in the demo's own process

class CrowdFailed(RuntimeError):
    """A customer process failed (its traceback is the message)."""


async def play(sale: Sale, worker_plans: list[Plan]) -> list[LoopLag]:
    """Start the workers, start the sale once every one is ready (`sale.started`, `sale.deadline`), and run
    them to their end, merging what they report into `sale` as it comes."""
    ctx = mp.get_context("spawn")  # a fresh interpreter: nothing of this process's loop or threads is copied
    out, start, stop = ctx.Queue(), ctx.Value("d", 0.0), ctx.Event()
    procs = [ctx.Process(target=work, args=(plan, out, start, stop, sale.end), name=f"demo-customers-{plan.worker}",
                         daemon=True) for plan in worker_plans]
    for proc in procs:
        proc.start()
    counts: dict[int, tuple[int, int, int]] = {}
    lags: list[LoopLag] = []
    pending, unready = {plan.worker for plan in worker_plans}, {plan.worker for plan in worker_plans}
    try:
        while pending:
            for kind, worker, body in _drain(out):
                if kind == "error":
                    raise CrowdFailed(f"customer process {worker} failed:\n{body}")
                unready.discard(worker)
                if not unready and not start.value:
                    sale.started = time.monotonic()
                    sale.deadline = sale.started + sale.cfg.seconds
                    start.value = sale.started
                sale.history.extend(body["ops"], body.get("journeys"))
                counts[worker] = body["counts"]
                sale.arrived, sale.shopping, sale.done = (sum(c[k] for c in counts.values()) for k in range(3))
                if kind == "done":
                    lags.append(body["lag"])
                    pending.discard(worker)
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead and pending:
                raise CrowdFailed(f"{dead[0].name} exited with status {dead[0].exitcode}")
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
    return sorted(lags, key=lambda lag: lag.worker)


def _drain(out: Any) -> list[tuple[str, int, Any]]:
    messages = []
    while True:
        try:
            messages.append(out.get_nowait())
        except stdlib_queue.Empty:
            return messages


async def run_sale(sale: Sale, on_tick: Callable[[], None] | None = None) -> None:
    """Open the sale, let the customers in, run until sold out or the limit; `on_tick()` refreshes a view.
    Leaves the customers' loop lag in `sale.lags`, the services' figures in `sale.server` and hold-service's
    refusals by limit in `sale.refused`."""
    async with Clients(keepalive=4) as own, httpx.AsyncClient(timeout=10, limits=MONITOR_LIMITS) as monitor:
        await open_sale(sale, own.of(sale.block.organizer))
        before = await server_figures.snapshot(monitor, sale.platform.url)
        helpers = [asyncio.create_task(watch(sale, monitor))]
        if on_tick:
            helpers.append(asyncio.create_task(_tick(on_tick)))
        try:
            sale.lags = await play(sale, plans(sale))
        finally:
            sale.ended = time.monotonic()
            for task in helpers:
                task.cancel()
        await read_seats(sale, monitor)
        sale.ending = (f"sold out after {sale.ended - sale.started:.1f} s" if sale.sold_out.is_set() else
                       f"stopped by the limit: --seconds {sale.cfg.seconds:g}" if sale.ended >= sale.deadline else
                       f"every customer left after {sale.ended - sale.started:.1f} s, seats unsold")
        after = await server_figures.snapshot(monitor, sale.platform.url)
        sale.server = server_figures.step_figures(before, after)
        sale.server_unread = after.unread
        sale.refused = server_figures.refusals(before, after)


async def _tick(on_tick: Callable[[], None], interval: float = 0.25) -> None:
    while True:
        on_tick()
        await asyncio.sleep(interval)
