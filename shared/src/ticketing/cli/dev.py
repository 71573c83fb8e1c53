"""Developer commands: tokens, topics, the broker's readiness, the event schemas, migrations."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from ticketing import contract
from ticketing.auth import ROLES, issue_token
from ticketing.kafka import create_topics, kafka_reachable, kafka_settings
from ticketing.migrations import apply_migrations, package_migrations, shared_migrations
from ticketing.settings import SERVICE_DATABASES, OperatorSettings, ServiceSettings, TokenSettings

PACKAGES = {"hold": "hold_service", "payment": "payment_service", "voucher": "voucher_service",
            "notifier": "notifier"}


def _token(args: argparse.Namespace) -> int:
    settings = TokenSettings()
    print(issue_token(settings.jwt_secret, sub=str(args.sub), role=args.role, ttl_seconds=args.ttl))
    return 0


def _topics(_: argparse.Namespace) -> int:
    created = asyncio.run(create_topics(ServiceSettings().kafka_bootstrap_servers, align=True))
    s = kafka_settings()
    print(f"topics created: {', '.join(created) if created else 'none (all present)'}; retention "
          f"{s.kafka_topic_retention_hours} h, DLQs {s.kafka_dlq_retention_hours} h, cleanup.policy delete")
    return 0


def _wait_kafka(args: argparse.Namespace) -> int:
    bootstrap = ServiceSettings().kafka_bootstrap_servers
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if asyncio.run(kafka_reachable(bootstrap)):
            return 0
        time.sleep(1)
    print(f"kafka not ready at {bootstrap} after {args.timeout}s", file=sys.stderr)
    return 1


def _contract(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if args.action == "write":
        print(f"contract: wrote {len(contract.write(folder))} schemas to {folder}")
        return 0
    stale = contract.differences(folder)
    if stale:
        print(f"contract: {folder} differs from the catalogue: {', '.join(stale)} (run: ticketing contract "
              f"write {folder})", file=sys.stderr)
    return 1 if stale else 0


def _migrate(args: argparse.Namespace) -> int:
    """The shared tables, then the service's own, with the service's role (as `make migrate`)."""
    settings = OperatorSettings()
    for service in args.service or list(PACKAGES):
        dsn = settings.database_url(service)
        if args.database:
            dsn = dsn.rsplit("/", 1)[0] + f"/{args.database}"
        apply_migrations(dsn, shared_migrations(), package_migrations(PACKAGES[service]))
        print(f"migrate: {service} up to date in {dsn.rsplit('/', 1)[1]}")
    return 0


def register(sub: Any) -> None:
    token = sub.add_parser("token", help="print a JWT")
    token.add_argument("--sub", type=int, required=True, help="customer id (decimal)")
    token.add_argument("--role", choices=ROLES, default="customer")
    token.add_argument("--ttl", type=int, default=3600, help="seconds until exp")
    token.set_defaults(run=_token)
    topics = sub.add_parser("topics", help="create the Kafka topics; set their retention and cleanup policy")
    topics.set_defaults(run=_topics)
    wait = sub.add_parser("wait-kafka", help="wait until Kafka answers metadata requests")
    wait.add_argument("--timeout", type=float, default=120)
    wait.set_defaults(run=_wait_kafka)
    schemas = sub.add_parser("contract", help="the event schemas generated from the catalogue")
    schemas.add_argument("action", choices=["write", "check"])
    schemas.add_argument("folder", nargs="?", default="docs/events/schemas")
    schemas.set_defaults(run=_contract)
    migrate = sub.add_parser("migrate", help="apply every service's migrations (yoyo), or one service's")
    migrate.add_argument("--service", action="append", choices=SERVICE_DATABASES, help="repeatable; default all")
    migrate.add_argument("--database", help="another database of the same server (e.g. ticketing_test)")
    migrate.set_defaults(run=_migrate)
