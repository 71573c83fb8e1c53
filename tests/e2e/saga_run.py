"""The randomized journey run (scenarios R14, R13 of docs/reliability.md): a catalogue, customers, a nemesis, a history.

Size and seed come from the environment, so CI runs a short one and a soak run a long one:

    JOURNEY_SEED (1)          the seed of every random choice (journey k of customer i draws the same)
    JOURNEY_CUSTOMERS (24)    customers shopping at once; two in three have an e-mail in the notifier
    JOURNEY_SECONDS (30)      how long customers keep starting journeys
    JOURNEY_SHOWTIMES (3)     showtimes per wave, JOURNEY_SEATS (16) seats each, and four vouchers (two
                              normal, two flash, limits 2 to 6); a new wave opens once customers found every
                              showtime of the current one sold out, so any length of run keeps competing
                              for a few seats and a few voucher uses

The nemesis, at fixed fractions of the run (of each minute of a longer run), scenarios R13 and R7:
SIGSTOP payment-service's worker for 3 s while callbacks and refunds flow, SIGSTOP the gateway simulator for
3 or 6 s (a gateway that does not answer while checkouts, refunds and reconciliation call it), SIGSTOP
hold-service's API for 3 s, then kill -9 one consumer process (chosen by the seed) and restart it.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from notifier.domain.messages import Contact
from notifier.entrypoints.cli.customers import upsert_all
from ticketing.auth import issue_token

from .customers import KEEPALIVE_EXPIRY, Catalogue, Customer, Shop
from .journeys import shopper
from .saga.history import History
from .saga.scope import Scope
from .stack import Stack

PRICE_CENTS = 1200
# code suffix, flash sale, total limit, discount: limits small enough to run out within a wave
VOUCHERS = (("N", False, 3, 300), ("M", False, 6, 150), ("F", True, 2, 400), ("G", True, 5, 200))
VICTIMS = ("hold-worker", "pay-worker", "voucher-worker", "notifier-worker")
NEMESIS_CYCLE_SECONDS = 60


@dataclass(frozen=True)
class RunConfig:
    seed: int = 1
    customers: int = 24
    seconds: float = 30
    showtimes: int = 3
    seats: int = 16

    @classmethod
    def from_env(cls) -> RunConfig:
        def get(name: str, default: float) -> float:
            return float(os.environ.get(f"JOURNEY_{name}") or default)
        d = cls()
        return cls(seed=int(get("SEED", d.seed)), customers=int(get("CUSTOMERS", d.customers)),
                   seconds=get("SECONDS", d.seconds), showtimes=int(get("SHOWTIMES", d.showtimes)),
                   seats=int(get("SEATS", d.seats)))


@dataclass
class RunResult:
    history: History
    scope: Scope
    customers: list[int]
    known: set[int]
    journeys_per_customer: list[int] = field(default_factory=list)
    elapsed: float = 0.0
    waves: int = 1


def _rows(seats: int) -> dict[str, int]:
    rows, letter = {}, ord("A")
    while seats > 0:
        rows[chr(letter)] = min(8, seats)
        seats -= rows[chr(letter)]
        letter += 1
    return rows


async def _created(client: httpx.AsyncClient, url: str, admin: dict[str, str], body: dict[str, Any],
                   existing: str, same: dict[str, Any]) -> None:
    """POST an operator's creation as an operator's tool would under a fault run: a 503 (a dependency down, e.g.
    the database's primary lost, or the instance killed before it answered) is retried for up to a minute, and
    so is no answer at all (the instance killed with the request in flight: HAProxy sends a POST without an
    Idempotency-Key to no other instance and drops the connection). An answer that it exists already
    (hold-service's 409, voucher-service's 422) means an earlier delivery of this very request was committed, as
    when an instance killed after its COMMIT left HAProxy no answer to give: it is taken as created when
    `existing` (the thing's own URL) answers it with the fields of `same`, else it is someone else's and the run
    fails. Each such case is printed with the answers before it (None: no answer)."""
    deadline = time.monotonic() + 60
    answers: list[int | None] = []
    while True:
        try:
            r = await client.post(url, headers=admin, json=body)
        except httpx.TransportError:  # no answer: connection dropped or refused
            assert time.monotonic() < deadline, answers
            answers.append(None)
            await asyncio.sleep(1)
            continue
        if r.status_code == 201:
            return
        if r.status_code in (409, 422) and "exists already" in r.text:
            found = await client.get(existing, headers=admin)
            assert found.status_code == 200 and same.items() <= found.json().items(), (answers, r.text, found.text)
            print(f"created: {url} {same} answered {r.status_code} 'exists already' after {answers or 'nothing'}; "
                  "it exists as asked")
            return
        assert r.status_code == 503 and time.monotonic() < deadline, (answers, r.text)
        answers.append(r.status_code)
        await asyncio.sleep(float(r.headers.get("Retry-After", "1")))


async def open_wave(shop: Shop, admin: dict[str, str], tag: str, base: int, number: int,
                    cfg: RunConfig) -> Catalogue:
    wave = Catalogue()
    for k in range(cfg.showtimes):
        showtime = base + number * 100 + k
        await _created(shop.client, f"{shop.url['hold']}/admin/showtimes", admin, {
            "showtimeId": showtime, "title": f"journey {tag} wave {number}", "startsAt": "2031-01-01T20:00:00Z",
            "priceCents": PRICE_CENTS, "rows": _rows(cfg.seats)},
            f"{shop.url['hold']}/showtimes/{showtime}/seats",
            {"showtimeId": showtime, "title": f"journey {tag} wave {number}"})
        wave.showtimes[showtime] = [f"{row}{n}" for row, count in _rows(cfg.seats).items()
                                    for n in range(1, count + 1)]
    now = datetime.now(UTC)
    for suffix, flash, limit, discount in VOUCHERS:
        body = {"code": f"J{tag}W{number}{suffix}", "discountAmount": discount, "minOrderAmount": 0,
                "totalLimit": limit, "perUserLimit": 1, "startsAt": (now - timedelta(hours=1)).isoformat(),
                "endsAt": (now + timedelta(days=1)).isoformat(), "flashSale": flash}
        await _created(shop.client, f"{shop.url['voucher']}/admin/vouchers", admin, body,
                       f"{shop.url['voucher']}/admin/vouchers/{body['code']}",
                       {"code": body["code"], "totalLimit": limit})
        wave.vouchers[body["code"]] = body
    shop.waves.append(wave)
    shop.wave = wave
    return wave


async def nemesis(stack: Stack, history: History, cfg: RunConfig, t0: float) -> None:
    """One cycle of faults per NEMESIS_CYCLE_SECONDS of run (at least one): a soak run repeats them."""
    cycles = max(1, int(cfg.seconds // NEMESIS_CYCLE_SECONDS))
    span = cfg.seconds / cycles

    async def at(cycle: int, fraction: float) -> None:
        await asyncio.sleep(max(0.0, t0 + (cycle + fraction) * span - time.monotonic()))

    async def pause(name: str, seconds: float) -> None:
        history.nemesis("pause", "invoke", process=name, seconds=seconds)
        await stack.pause(name, seconds)
        history.nemesis("pause", "ok", process=name, seconds=seconds)

    for cycle in range(cycles):
        # The kill comes last: a restart costs seconds of CPU (imports) and, on a busy machine, stalls the
        # saga long after it; the pauses come first so their effects are seen while everything else runs.
        victim = random.Random(f"{cfg.seed}:nemesis:{cycle}").choice(VICTIMS)
        await at(cycle, 0.25)
        await pause("pay-worker", 3.0)
        await at(cycle, 0.40)
        # Shorter than payment-service's gateway timeout (4 s), the calls in flight answer late: checkouts get
        # their session seconds after the hold check, while a cancel may land (issue 11 case 4). Every other
        # cycle of a soak, longer than the timeout: checkouts answer 503 and refunds retry.
        await pause("simulator", 3.0 if cycle % 2 == 0 else 6.0)
        await at(cycle, 0.60)
        await pause("hold-api", 3.0)
        await at(cycle, 0.75)
        history.nemesis("kill", "invoke", process=victim, signal="SIGKILL")
        stack.kill(victim)
        history.nemesis("kill", "ok", process=victim)
        await asyncio.to_thread(stack.restart, victim)
        history.nemesis("restart", "ok", process=victim)


async def run_journeys(stack: Stack, cfg: RunConfig) -> RunResult:
    tag = uuid.uuid4().hex[:6].upper()
    base = (10**9 + uuid.uuid4().int % 10**9) * 1000
    first = 10**11 + uuid.uuid4().int % 10**11
    customers = [first + i for i in range(cfg.customers)]
    known = {c for i, c in enumerate(customers) if i % 3 != 0}
    await upsert_all(stack.dsn["notifier"], [Contact(c, f"c{c}@example.com", f"Journey {c}") for c in sorted(known)])
    admin = {"Authorization": f"Bearer {issue_token(stack.jwt_secret, sub='1', role='admin')}"}
    history = History()
    limits = httpx.Limits(max_connections=cfg.customers * 3, max_keepalive_connections=cfg.customers,
                          keepalive_expiry=KEEPALIVE_EXPIRY)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        shop = Shop(url=stack.url, client=client, history=history, jwt_secret=stack.jwt_secret,
                    hold_ttl=stack.timings.hold_ttl)
        shop.open_wave = lambda: open_wave(shop, admin, tag, base, len(shop.waves), cfg)
        await shop.open_wave()
        t0 = time.monotonic()
        end = t0 + cfg.seconds
        shoppers = [shopper(Customer(shop, i, c, cfg.seed), lambda: time.monotonic() >= end)
                    for i, c in enumerate(customers)]
        faults = asyncio.create_task(nemesis(stack, history, cfg, t0))
        counts = await asyncio.gather(*shoppers)
        await faults
    scope = Scope(showtimes={s for w in shop.waves for s in w.showtimes},
                  vouchers={v for w in shop.waves for v in w.vouchers})
    return RunResult(history=history, scope=scope, customers=customers, known=known,
                     journeys_per_customer=list(counts), elapsed=time.monotonic() - t0, waves=len(shop.waves))


def describe(cfg: RunConfig, result: RunResult) -> dict[str, Any]:
    return {"seed": cfg.seed, "customers": cfg.customers, "known_customers": len(result.known),
            "seconds": cfg.seconds, "elapsed": round(result.elapsed, 1), "waves": result.waves,
            "showtimes": len(result.scope.showtimes or ()),
            "seats_per_showtime": cfg.seats, "vouchers": len(result.scope.vouchers or ()),
            "journeys": sum(result.journeys_per_customer)}


def pause_figures(history: History) -> list[dict[str, Any]]:
    """R13 figures: each fault, and the calls that were in flight while a process was stopped (their worst
    latency shows the pause, as an open-loop client sees it)."""
    figures: list[dict[str, Any]] = []
    started: dict[str, float] = {}
    for op in history.ops:
        if op["process"] != "nemesis":
            continue
        name = op["value"].get("process", "")
        if op["type"] == "invoke":
            started[name] = op["time"]
            continue
        t0 = started.pop(name, op["time"])
        overlapped = [c for c in history.completions()
                      if c["time"] >= t0 and c["time"] - c.get("latency", 0) <= op["time"]]
        figures.append({"fault": op["f"], "process": name, "at": t0, "seconds": round(op["time"] - t0, 1),
                        "calls_in_flight": len(overlapped),
                        "worst_latency": max((c.get("latency", 0) for c in overlapped), default=0),
                        "refused_503": sum(1 for c in overlapped if c.get("status") == 503)})
    return figures
