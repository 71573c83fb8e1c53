"""The stack the seat-map page needs, as real processes on free ports (test database, real Kafka): hold-service
(API + worker), payment-service (API + worker) and the gateway simulator; and Debian's chromium, driven by
Playwright through `executable_path` (`make browser` installs it)."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from ticketing.events import BOOKING_EVENTS
from ticketing_testing import REPO_ROOT, env, free_port, require, service_process, start_at_end, wait_http_ok
from ticketing_testing.lifted_limits import UNLIMITED_HOLDS

from .diagnostics import WatchedBrowser, machine_pressure, python_stacks

LOGS = REPO_ROOT / "var" / "log" / "tests" / "browser"
SCREENSHOTS = REPO_ROOT / "var" / "screenshots"
MIGRATIONS = {"HOLD_DATABASE_URL": REPO_ROOT / "services/hold-service/src/hold_service/sql/migrations",
              "PAYMENT_DATABASE_URL": REPO_ROOT / "services/payment-service/src/payment_service/sql/migrations"}
WEBHOOK_SECRET = "whsec_browser_only_0123456789abcdef0123"


@dataclass
class PageStack:
    hold_url: str
    pay_url: str
    jwt_secret: str
    pids: dict[str, int] = field(default_factory=dict)  # process name -> pid (a failed test's stacks)


def _worker(package: str, roles: str) -> list[str]:
    """Only the roles a booking needs: the relays and hold-service's PaymentSucceeded consumer."""
    return ["-m", f"{package}.entrypoints.worker", "--roles", roles]


def _api(package: str, port: int) -> list[str]:
    return ["-m", "uvicorn", "--factory", f"{package}.entrypoints.api.app:get_application",
            "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]


@pytest.fixture(scope="module")  # its relays and consumer stop with the module: they would take later stacks' work
def page_stack(migrated_dsn, kafka_bootstrap, redis_url) -> Iterator[PageStack]:  # type: ignore[no-untyped-def]
    dsn = {name: migrated_dsn(name, path) for name, path in MIGRATIONS.items()}
    ports = {name: free_port() for name in ("hold", "pay", "sim")}
    url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    prefix = f"browser-{uuid.uuid4().hex[:8]}-"
    common = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "KAFKA_GROUP_PREFIX": prefix, "REDIS_URL": redis_url,
              "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET, "APP_ENV": "dev", "LOG_LEVEL": "WARNING"}
    hold = {**common, "HOLD_DATABASE_URL": dsn["HOLD_DATABASE_URL"], "PAYMENT_PUBLIC_URL": url["pay"],
            **UNLIMITED_HOLDS, "CATALOGUE_PAGE_SIZE": "3"}  # What's on and the door then read several pages
    pay = {**common, "PAYMENT_DATABASE_URL": dsn["PAYMENT_DATABASE_URL"], "HOLD_SERVICE_URL": url["hold"],
           "STRIPE_API_BASE": url["sim"], "CHECKOUT_RETURN_URL": f"{url['hold']}/pages/showtimes/{{showtimeId}}",
           "CORS_ALLOWED_ORIGINS": url["hold"]}
    sim = {**common, "GATEWAY_SIMULATOR_PORT": str(ports["sim"]), "GATEWAY_PUBLIC_URL": url["sim"],
           "SIM_WEBHOOK_URL": f"{url['pay']}/payments/callback"}
    LOGS.mkdir(parents=True, exist_ok=True)
    # The one consumer a booking needs (PaymentSucceeded) begins at the topic's end, not at its history.
    asyncio.run(start_at_end(kafka_bootstrap, {BOOKING_EVENTS: [f"{prefix}hold-service.payments"]}))
    pids = {}
    with ExitStack() as procs:
        for name, args, env_ in (("simulator", ["-m", "gateway_simulator"], sim),
                                 ("hold-api", _api("hold_service", ports["hold"]), hold),
                                 ("hold-worker", _worker("hold_service", "relay,consumer"), hold),
                                 ("pay-api", _api("payment_service", ports["pay"]), pay),
                                 ("pay-worker", _worker("payment_service", "relay"), pay)):
            pids[name] = procs.enter_context(service_process(args, env_, log_path=LOGS / f"{name}.log")).pid
        for name in ("sim", "hold", "pay"):
            wait_http_ok(f"{url[name]}/healthz", 90)
        yield PageStack(hold_url=url["hold"], pay_url=url["pay"], jwt_secret=env("JWT_SECRET"), pids=pids)


@pytest_asyncio.fixture(scope="session")
async def chromium_browser() -> AsyncIterator[Any]:
    chromium = shutil.which("chromium")
    require("Chromium", chromium is not None, "no chromium on PATH; run `make browser`")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        await launched.close()


@pytest_asyncio.fixture
async def browser(chromium_browser) -> AsyncIterator[WatchedBrowser]:  # type: ignore[no-untyped-def]
    """The session's chromium, its contexts watched for a failure's report and closed after the test."""
    watched = WatchedBrowser(chromium_browser)
    yield watched
    await watched.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """A browser test that failed: its pages' unfinished requests and journal, and its processes'
    Python stacks, then."""
    outcome = yield
    report = outcome.get_result()
    watched = item.funcargs.get("browser") if hasattr(item, "funcargs") else None
    if report.when != "call" or not report.failed or not isinstance(watched, WatchedBrowser):
        return
    report.sections.append(("the pages' unfinished requests", watched.unfinished()))
    report.sections.append(("the pages' journal (seconds into the test)", watched.journal_text()))
    pids = {name: pid for value in item.funcargs.values() for name, pid in _pids(value).items()}
    report.sections.append(("the stack's Python stacks (py-spy)", python_stacks(pids)))
    report.sections.append(("the machine", machine_pressure()))


def _pids(stack: Any) -> dict[str, int]:
    if isinstance(stack, PageStack):
        return stack.pids
    procs = getattr(stack, "procs", None)  # tests/e2e/stack.py's Stack
    if isinstance(procs, dict):
        return {name: proc.popen.pid for name, proc in procs.items() if getattr(proc, "popen", None)}
    return {}


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
