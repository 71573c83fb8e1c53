"""`make bench-checkout`: a checkout inside payment-service, p50 / p99, with each way of calling the provider,
interleaved in one run.

Each checkout is payment-service's whole `start_checkout` (the Idempotency-Key claimed, the PENDING payment
written, the hold extended, the provider's session created, CheckoutStarted written to the outbox) on the TEST
database, against the Stripe-shaped simulator (its own process); hold-service and voucher-service are the
in-memory stand-ins of payment-service's tests, so the figures are payment-service's and the provider hop's.
The provider is called three ways, in rounds that alternate between them so the shared machine's changing
speed falls on all three alike:
- `sdk-thread`: the Stripe SDK's blocking methods, each call in a worker thread (adapters/stripe_provider.py,
  what ships);
- `sdk-async`: the same SDK's async methods over httpx's AsyncClient, on the event loop;
- `plain-httpx`: the same requests sent with plain httpx, no SDK: how the adapter called the provider before
  the SDK (the floor the SDK's own cost is measured against).
BENCH_ROUNDS (5) rounds of BENCH_CHECKOUTS (200) checkouts each, BENCH_CONCURRENCY (8) at a time.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import stripe

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

from payment_service.adapters.stripe_provider import StripeGateway, session_state  # noqa: E402
from payment_service.bootstrap import bootstrap  # noqa: E402
from payment_service.config import Settings  # noqa: E402
from payment_service.domain.commands import StartCheckout  # noqa: E402
from payment_service.domain.model import Payment  # noqa: E402
from payment_service.service_layer.checkout import start_checkout  # noqa: E402
from payment_service.service_layer.ports import GatewaySession  # noqa: E402
from results import Results  # noqa: E402
from ticketing_testing import (  # noqa: E402
    apply_migrations,
    free_port,
    import_path,
    merchant_auth,
    service_process,
    shared_migrations,
    test_dsn,
)
from ticketing_testing import env as setting  # noqa: E402

MIGRATIONS = ROOT / "services/payment-service/src/payment_service/sql/migrations"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
CHECKOUTS = int(os.environ.get("BENCH_CHECKOUTS", "200"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "8"))
KEY = "bench-checkout-"  # the Idempotency-Keys of its checkouts: what it wrote is deleted by them at the end
fakes = import_path(ROOT / "services/payment-service/tests/fakes", "payment_bench_fakes")


class AsyncSdk(StripeGateway):
    """The SDK's async methods (httpx's AsyncClient), on the event loop."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, timeout=10)
        base = {"api": settings.stripe_api_base} if settings.stripe_api_base else {}
        self.nonblocking = stripe.StripeClient(settings.stripe_api_key, base_addresses=base,  # type: ignore[arg-type]
                                               http_client=stripe.HTTPXClient(timeout=10))

    async def create_session(self, payment: Payment) -> GatewaySession:
        session = await self.nonblocking.v1.checkout.sessions.create_async(
            self.session_params(payment), {"idempotency_key": f"checkout-{payment.payment_id}"})  # type: ignore[arg-type]
        return GatewaySession(session_id=session.id, url=str(session.url))


class PlainHttpx(StripeGateway):
    """The same request, form-encoded by hand and sent with plain httpx (no SDK)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings, timeout=10)
        self.http = httpx.AsyncClient(base_url=str(settings.stripe_api_base), timeout=10,
                                      headers={"Authorization": f"Bearer {settings.stripe_api_key}"})

    async def create_session(self, payment: Payment) -> GatewaySession:
        p = self.session_params(payment)
        item = p["line_items"][0]
        form = {"mode": "payment", "client_reference_id": p["client_reference_id"],
                "success_url": p["success_url"], "cancel_url": p["cancel_url"], "line_items[0][quantity]": "1",
                "line_items[0][price_data][currency]": item["price_data"]["currency"],
                "line_items[0][price_data][unit_amount]": str(item["price_data"]["unit_amount"]),
                "line_items[0][price_data][product_data][name]": item["price_data"]["product_data"]["name"],
                **{f"metadata[{k}]": v for k, v in p["metadata"].items()}}
        r = await self.http.post("/v1/checkout/sessions", data=form,
                                 headers={"Idempotency-Key": f"checkout-{payment.payment_id}"})
        r.raise_for_status()
        state = session_state(r.json())
        return GatewaySession(session_id=state.session_id, url=r.json()["url"])


async def one_round(deps: Any, holds: Any) -> list[float]:
    gate = asyncio.Semaphore(CONCURRENCY)
    times: list[float] = []

    async def checkout(n: int) -> None:
        customer = 10**11 + uuid.uuid4().int % 10**11
        hold = holds.add(customer)
        async with gate:
            started = time.perf_counter()
            await start_checkout(StartCheckout(hold.hold_id, customer, f"{KEY}{n}", None), deps)
            times.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(checkout(n) for n in range(CHECKOUTS)))
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


async def run(sim_url: str, dsn: str) -> dict[str, Any]:
    settings = Settings(database_url=dsn, stripe_api_base=sim_url, db_pool_max=CONCURRENCY + 2,
                        stripe_api_key=merchant_auth()["Authorization"].split(" ", 1)[1])
    holds = fakes.FakeHoldDirectory()
    variants = {"sdk-thread": StripeGateway(settings, timeout=10), "sdk-async": AsyncSdk(settings),
                "plain-httpx": PlainHttpx(settings)}
    services = {name: await bootstrap(settings, holds=holds, vouchers=fakes.FakeVouchers(), gateway=gateway)
                for name, gateway in variants.items()}
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    try:
        await one_round(services["sdk-thread"].deps, holds)  # warm-up: connections, prepared statements
        for r in range(ROUNDS):
            for name in (list(variants) if r % 2 == 0 else list(reversed(variants))):
                times = await one_round(services[name].deps, holds)
                rounds[name].append({"p50_ms": pct(times, 0.5), "p99_ms": pct(times, 0.99)})
                print(f"round {r + 1} {name:12} p50 {rounds[name][-1]['p50_ms']:7.2f} ms  "
                      f"p99 {rounds[name][-1]['p99_ms']:7.2f} ms", flush=True)
    finally:
        for service in services.values():
            await service.close()
    return {name: {"median_p50_ms": round(statistics.median(r["p50_ms"] for r in rs), 2),
                   "median_p99_ms": round(statistics.median(r["p99_ms"] for r in rs), 2), "rounds": rs}
            for name, rs in rounds.items()}


async def clean_up(dsn: str) -> int:
    """Its payments (PENDING, each with a session nobody pays) would otherwise be the tests' reconciler's oldest
    candidates: deleted, with their outbox rows and keys."""
    conn = await asyncpg.connect(dsn)
    try:
        async with conn.transaction():
            gone = await conn.fetch("DELETE FROM payment WHERE idempotency_key LIKE $1 RETURNING booking_id::text",
                                    f"{KEY}%")
            await conn.execute("DELETE FROM outbox WHERE message_key = ANY($1::text[])", [r[0] for r in gone])
            await conn.execute("DELETE FROM idempotency_key WHERE key LIKE $1", f"{KEY}%")
        return len(gone)
    finally:
        await conn.close()


def main() -> None:
    dsn = test_dsn(setting("PAYMENT_DATABASE_URL"))
    apply_migrations(dsn, shared_migrations(), MIGRATIONS)
    port = free_port()
    sim = {"GATEWAY_SIMULATOR_PORT": str(port), "GATEWAY_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "SIM_WEBHOOK_URL": "http://127.0.0.1:9/none", "LOG_LEVEL": "WARNING", "ACCESS_LOG": "false"}
    with Results("checkout") as results, \
            service_process(["-m", "gateway_simulator"], sim, ready_url=f"http://127.0.0.1:{port}/healthz"):
        results.data.update(rounds=ROUNDS, checkouts=CHECKOUTS, concurrency=CONCURRENCY)
        try:
            results.data["variants"] = asyncio.run(run(f"http://127.0.0.1:{port}", dsn))
        finally:
            print(f"deleted the benchmark's {asyncio.run(clean_up(dsn))} payments", flush=True)
    print(f"\ncheckout inside payment-service, {CHECKOUTS} x {ROUNDS} rounds, {CONCURRENCY} at a time "
          "(medians of the rounds):")
    for name, figures in results.data["variants"].items():
        print(f"  {name:12} p50 {figures['median_p50_ms']:7.2f} ms   p99 {figures['median_p99_ms']:7.2f} ms")


if __name__ == "__main__":
    main()
