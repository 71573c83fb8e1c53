"""`ticketing`: the dev command line (tokens, topics, readiness waits).

    ticketing token --sub 7 --role customer      print a JWT signed with JWT_SECRET (.env)
    ticketing topics                             create the Kafka topics (idempotent)
    ticketing wait-kafka --timeout 120           wait for a real metadata answer
    ticketing contract write|check DIR           the event schemas generated from the catalogue
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from ticketing import contract
from ticketing.auth import ROLES, issue_token
from ticketing.kafka import create_topics, kafka_reachable
from ticketing.settings import ServiceSettings


def _token(args: argparse.Namespace) -> int:
    settings = ServiceSettings()
    print(issue_token(settings.jwt_secret, sub=str(args.sub), role=args.role, ttl_seconds=args.ttl))
    return 0


def _topics(_: argparse.Namespace) -> int:
    settings = ServiceSettings()
    created = asyncio.run(create_topics(settings.kafka_bootstrap_servers))
    print(f"topics created: {', '.join(created) if created else 'none (all present)'}")
    return 0


def _wait_kafka(args: argparse.Namespace) -> int:
    settings = ServiceSettings()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if asyncio.run(kafka_reachable(settings.kafka_bootstrap_servers)):
            return 0
        time.sleep(1)
    print(f"kafka not ready at {settings.kafka_bootstrap_servers} after {args.timeout}s", file=sys.stderr)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ticketing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    token = sub.add_parser("token", help="print a JWT")
    token.add_argument("--sub", type=int, required=True, help="customer id (decimal)")
    token.add_argument("--role", choices=ROLES, default="customer")
    token.add_argument("--ttl", type=int, default=3600, help="seconds until exp")
    token.set_defaults(run=_token)
    sub.add_parser("topics", help="create Kafka topics").set_defaults(run=_topics)
    wait = sub.add_parser("wait-kafka", help="wait until Kafka answers metadata requests")
    wait.add_argument("--timeout", type=float, default=120)
    wait.set_defaults(run=_wait_kafka)
    schemas = sub.add_parser("contract", help="the event schemas generated from the catalogue")
    schemas.add_argument("action", choices=["write", "check"])
    schemas.add_argument("folder", nargs="?", default="docs/events/schemas")
    schemas.set_defaults(run=_contract)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
