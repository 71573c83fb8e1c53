"""`ticketing-run <component> <role> [args...]`: the one command the container image runs.

    ticketing-run hold-service api                      the HTTP API (uvicorn) on HTTP_HOST:HTTP_PORT
    ticketing-run hold-service worker --roles relay     worker roles (each service's worker module lists them)
    ticketing-run hold-service migrate                  shared + service migrations (yoyo), then sql/schema.sql
    ticketing-run notifier worker --roles sender        the notifier (faust) worker; ops pages on HTTP_PORT
    ticketing-run kafka topics                          create the topics (after waiting for the broker)
    ticketing-run smtp-sink serve --dir /data/mail      dev: the SMTP sink
    ticketing-run gateway-simulator api                 dev: the payment gateway (HOST, GATEWAY_SIMULATOR_PORT)

`api` and `worker` replace this process with the real one (exec), so signals from the container runtime
reach uvicorn or the worker directly. `migrate` and `topics` first wait for their dependency (a
Kubernetes Job or a compose one-shot may start before the database or broker answers), then exit 0.
Components are named here as strings and never imported: the shared library depends on no service.
The dev components (services/dev-tools) are only in the dev image (ticketing-app-dev) and the dev venv: in the
production image (ticketing-app) a dev role stops with one line and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import psycopg
from pydantic_settings import BaseSettings, SettingsConfigDict
from tenacity import RetryCallState, Retrying, retry_if_exception_type, retry_if_result, wait_fixed

from ticketing.cli import main as ticketing_cli
from ticketing.migrations import apply_migrations, package_migrations, shared_migrations
from ticketing.settings import ServiceSettings


@dataclass(frozen=True)
class Component:
    package: str
    roles: tuple[str, ...]
    http_port: int = 0  # the API's default port (docs/api)
    dev: bool = False  # a dev tool (services/dev-tools), absent from the production image


COMPONENTS: dict[str, Component] = {
    "hold-service": Component("hold_service", ("api", "worker", "migrate"), 8001),
    "payment-service": Component("payment_service", ("api", "worker", "migrate"), 8002),
    "voucher-service": Component("voucher_service", ("api", "worker", "migrate"), 8003),
    "notifier": Component("notifier", ("worker", "migrate")),
    "kafka": Component("ticketing", ("topics",)),
    "gateway-simulator": Component("gateway_simulator", ("api",), dev=True),
    "smtp-sink": Component("smtp_sink", ("serve",), dev=True),
}

# The exit status of a dev role asked of an image without the dev tools: not 1, so a supervisor or a test
# tells "wrong image" from a component that failed.
NOT_IN_THIS_IMAGE = 2


# How every API is served, wherever it runs (`make up`, compose, the chart all go through here):
# --no-proxy-headers: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 and put its address in
#   place of the peer's; the peer's address decides, unless the app itself trusts the peer as a proxy
#   (hold-service: TRUSTED_PROXIES);
# --http: httptools, refusing a request head over MAX_HEADER_BYTES while it is read (ticketing.api.server).
API_SERVER_OPTIONS = ("--no-access-log", "--no-proxy-headers", "--http", "ticketing.api.server:HeadLimitedHttpTools")


class ApiSettings(BaseSettings):
    """Where an API listens; the same names the services' own settings use."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", use_attribute_docstrings=True)
    http_host: str = "127.0.0.1"
    """The address the API listens on (0.0.0.0 in a container)."""
    http_port: int | None = None
    """The API's port; unset: the service's own (hold 8001, payment 8002, voucher 8003)."""


def command(component: str, role: str, args: list[str]) -> list[str]:
    """The argv a long-running role execs into."""
    c = COMPONENTS[component]
    if role == "api" and component == "gateway-simulator":
        return [sys.executable, "-m", "gateway_simulator", *args]
    if role == "api":
        s = ApiSettings()
        # uvicorn takes WEB_CONCURRENCY (worker processes, default 1) from the environment itself; `args`
        # may add more (`make up` runs two: --workers 2).
        return [sys.executable, "-m", "uvicorn", "--factory", f"{c.package}.entrypoints.api.app:get_application",
                "--host", s.http_host, "--port", str(s.http_port or c.http_port), *API_SERVER_OPTIONS, *args]
    if role == "worker":
        return [sys.executable, "-m", f"{c.package}.entrypoints.worker", *args]
    if role == "serve" and component == "smtp-sink":
        return [sys.executable, "-m", "smtp_sink", *args]
    raise ValueError(f"{component} {role} is not a long-running role")


def migrate(package: str, wait_seconds: float) -> int:
    dsn = ServiceSettings().database_url
    deadline = time.monotonic() + wait_seconds
    wait_for(f"postgres ({_host_of(dsn)})", lambda: _postgres_answers(dsn), wait_seconds)

    def retrying(state: RetryCallState) -> None:
        error = str(state.outcome.exception() if state.outcome else "").strip()
        print(f"ticketing-run: {package} migrations: {error}; retrying", file=sys.stderr, flush=True)

    # yoyo opens a new connection per migration; one that fails (a container network's DNS answering
    # "temporary failure" for a moment, the server restarting) is retried until the deadline: each migration
    # is one transaction, recorded as applied in it, so a retry applies only what is still missing.
    for attempt in Retrying(retry=retry_if_exception_type(psycopg.OperationalError), wait=wait_fixed(1),
                            stop=lambda _: time.monotonic() > deadline, before_sleep=retrying, reraise=True):
        with attempt:
            apply_migrations(dsn, shared_migrations(), package_migrations(package))
    print(f"ticketing-run: {package} migrations applied", flush=True)
    return 0


def topics(wait_seconds: float) -> int:
    if ticketing_cli(["wait-kafka", "--timeout", str(wait_seconds)]) != 0:
        return 1
    return ticketing_cli(["topics"])


def wait_for(what: str, answers: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout

    def late(_: RetryCallState) -> None:
        raise SystemExit(f"ticketing-run: {what} did not answer within {timeout:.0f}s")

    Retrying(retry=retry_if_result(lambda answered: not answered), wait=wait_fixed(1),
             stop=lambda _: time.monotonic() > deadline, retry_error_callback=late)(answers)


def _postgres_answers(dsn: str) -> bool:
    async def probe() -> None:
        conn = await asyncpg.connect(dsn, timeout=3)
        await conn.close()
    try:
        asyncio.run(probe())
        return True
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False


def _host_of(dsn: str) -> str:
    return dsn.rsplit("@", 1)[-1].split("/", 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ticketing-run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("component", choices=sorted(COMPONENTS))
    parser.add_argument("role")
    parser.add_argument("--wait", type=float, default=120.0,
                        help="migrate/topics: seconds to wait for the database or broker (default 120)")
    args, rest = parser.parse_known_args(argv)
    component = COMPONENTS[args.component]
    if args.role not in component.roles:
        parser.error(f"{args.component} has roles {', '.join(component.roles)}, not {args.role}")
    if component.dev and importlib.util.find_spec(component.package) is None:
        print(f"ticketing-run: {args.component} is a dev tool, not in this image: run it from the dev image "
              "(ticketing-app-dev) or the dev venv", file=sys.stderr, flush=True)
        return NOT_IN_THIS_IMAGE
    if args.role == "migrate":
        return migrate(component.package, args.wait)
    if args.role == "topics":
        return topics(args.wait)
    argv_ = command(args.component, args.role, rest)
    os.execvp(argv_[0], argv_)  # noqa: S606 - a fixed program name and our own arguments


if __name__ == "__main__":
    sys.exit(main())
