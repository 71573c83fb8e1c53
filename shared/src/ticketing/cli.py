"""`ticketing`: the dev command line (tokens, topics, readiness waits).

    ticketing token --sub 7 --role customer      print a JWT signed with JWT_SECRET (.env)
    ticketing topics                             create the Kafka topics (idempotent)
    ticketing wait-kafka --timeout 120           wait for a real metadata answer
    ticketing contract write|check DIR           the event schemas generated from the catalogue
    ticketing outbox quarantined --service hold  outbox rows Kafka refused for good, with their errors
    ticketing outbox replay --service hold --id N [--dry-run]
                                                 put one back in line (again: no effect) once the cause
                                                 is fixed; the rows of its key held behind it follow it

The outbox commands reach each service's database through the variables the services read
(HOLD_DATABASE_URL, PAYMENT_DATABASE_URL, VOUCHER_DATABASE_URL, NOTIFIER_DATABASE_URL; .env).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import asyncpg

from ticketing import contract, outbox
from ticketing.auth import ROLES, issue_token
from ticketing.kafka import create_topics, kafka_reachable
from ticketing.settings import SERVICE_DATABASES, OperatorSettings, ServiceSettings


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
async def _connect(service: str) -> asyncpg.Connection:
    return await asyncpg.connect(OperatorSettings().database_url(service), timeout=5)


def _quarantined(args: argparse.Namespace) -> int:
    async def run() -> list[asyncpg.Record]:
        conn = await _connect(args.service)
        try:
            return await outbox.quarantined(conn)
        finally:
            await conn.close()

    rows = asyncio.run(run())
    for row in rows:
        print(f"{row['id']} {row['topic']} key={row['message_key']} event={row['event_id']} "
              f"bytes={row['payload_bytes']} quarantined={row['quarantined_at'].isoformat()} "
              f"held behind: {row['held_behind']}\n    {row['quarantine_error']}")
    print(f"{len(rows)} row(s) in quarantine in {args.service}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    async def run() -> outbox.ReplayResult:
        conn = await _connect(args.service)
        try:
            return await outbox.replay(conn, args.id, dry_run=args.dry_run)
        finally:
            await conn.close()

    result = asyncio.run(run())
    said = {"missing": f"no outbox row {args.id} in {args.service}",
            "published": f"row {args.id} is not in quarantine: already published",
            "in line": f"row {args.id} is not in quarantine: in line for the relay",
            "quarantined": f"would put row {args.id} back in line (refused with: {result.error})",
            "replayed": f"row {args.id} is back in line; it was refused with: {result.error}"}[result.state]
    print(said)
    return 1 if result.state == "missing" else 0


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
    box = sub.add_parser("outbox", help="outbox rows in quarantine").add_subparsers(dest="action", required=True)
    listing = box.add_parser("quarantined", help="list the rows Kafka refused for good")
    listing.add_argument("--service", choices=SERVICE_DATABASES, required=True)
    listing.set_defaults(run=_quarantined)
    replay = box.add_parser("replay", help="put a quarantined row back in line")
    replay.add_argument("--service", choices=SERVICE_DATABASES, required=True)
    replay.add_argument("--id", type=int, required=True, help="the outbox row id (see `outbox quarantined`)")
    replay.add_argument("--dry-run", action="store_true", help="say what would happen, change nothing")
    replay.set_defaults(run=_replay)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
