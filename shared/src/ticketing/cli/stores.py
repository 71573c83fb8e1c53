"""The outbox and the inbox of each service, for operators: status, and the quarantined rows."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from ticketing import outbox
from ticketing.outbox import QUERIES
from ticketing.settings import SERVICE_DATABASES, OperatorSettings

T = TypeVar("T")


def on_service(service: str, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """`work` on a connection to `service`'s database (its role, so its schema)."""
    async def run() -> T:
        conn = await asyncpg.connect(OperatorSettings().database_url(service), timeout=5)
        try:
            return await work(conn)
        finally:
            await conn.close()
    return asyncio.run(run())


def _outbox_status(args: argparse.Namespace) -> int:
    for service in args.service or list(SERVICE_DATABASES):
        row = on_service(service, lambda conn: conn.fetchrow(QUERIES.outbox_status))
        assert row is not None  # an aggregate always has its row
        oldest = f"{row['oldest_seconds']:.1f} s" if row["oldest_seconds"] is not None else "-"
        print(f"{service:9} waiting {row['waiting']:>6}  oldest {oldest:>9}  without their seat-map version "
              f"{row['unnumbered']:>6}  quarantined {row['quarantined']:>4}"
              f"  published (last day) {row['published']:>7}")
    return 0


def _inbox_status(args: argparse.Namespace) -> int:
    for service in args.service or list(SERVICE_DATABASES):
        for row in on_service(service, lambda conn: conn.fetch(QUERIES.inbox_status)):
            print(f"{service:9} {row['consumer']:60} processed {row['processed']:>8}  "
                  f"last {row['last_processed_at'].isoformat()}")
    return 0


def _quarantined(args: argparse.Namespace) -> int:
    rows = on_service(args.service, outbox.quarantined)
    for row in rows:
        print(f"{row['id']} {row['topic']} key={row['message_key']} event={row['event_id']} "
              f"bytes={row['payload_bytes']} quarantined={row['quarantined_at'].isoformat()} "
              f"held behind: {row['held_behind']}\n    {row['quarantine_error']}")
    print(f"{len(rows)} row(s) in quarantine in {args.service}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    result = on_service(args.service, lambda conn: outbox.replay(conn, args.id, dry_run=args.dry_run))
    said = {"missing": f"no outbox row {args.id} in {args.service}",
            "published": f"row {args.id} is not in quarantine: already published",
            "in line": f"row {args.id} is not in quarantine: in line for the relay",
            "quarantined": f"would put row {args.id} back in line (refused with: {result.error})",
            "replayed": f"row {args.id} is back in line; it was refused with: {result.error}"}[result.state]
    print(said)
    return 1 if result.state == "missing" else 0


def register(sub: Any) -> None:
    box = sub.add_parser("outbox", help="the services' outboxes").add_subparsers(dest="action", required=True)
    status = box.add_parser("status", help="rows waiting, the oldest, those without their seat-map version, "
                                           "in quarantine, per service")
    status.add_argument("--service", action="append", choices=SERVICE_DATABASES, help="repeatable; default all")
    status.set_defaults(run=_outbox_status)
    listing = box.add_parser("quarantined", help="list the rows Kafka refused for good")
    listing.add_argument("--service", choices=SERVICE_DATABASES, required=True)
    listing.set_defaults(run=_quarantined)
    replay = box.add_parser("replay", help="put a quarantined row back in line")
    replay.add_argument("--service", choices=SERVICE_DATABASES, required=True)
    replay.add_argument("--id", type=int, required=True, help="the outbox row id (see `outbox quarantined`)")
    replay.add_argument("--dry-run", action="store_true", help="say what would happen, change nothing")
    replay.set_defaults(run=_replay)
    inbox = sub.add_parser("inbox", help="the consumers' inboxes").add_subparsers(dest="action", required=True)
    istatus = inbox.add_parser("status", help="events processed per consumer, and the last one")
    istatus.add_argument("--service", action="append", choices=SERVICE_DATABASES, help="repeatable; default all")
    istatus.set_defaults(run=_inbox_status)
