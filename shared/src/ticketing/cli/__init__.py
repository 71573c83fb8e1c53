"""`ticketing`: the platform's command line, for developers and operators.

    ticketing token --sub 7 --role customer      a dev JWT signed with JWT_SECRET (.env)
    ticketing topics | wait-kafka                 create the topics; wait for the broker
    ticketing contract write|check [DIR]          the event schemas generated from the catalogue
    ticketing migrate [--service S] [--database D]   every service's migrations (yoyo), or one's
    ticketing outbox status                       per service: rows waiting, oldest, in quarantine
    ticketing outbox quarantined|replay ...       rows Kafka refused for good; put one back in line
    ticketing inbox status                        per consumer: events processed, the last one
    ticketing dlq list|show|replay ...            dead letters: list, look at one, send back (dry run first)
    ticketing booking <bookingId>                 one booking's story across the four schemas and the topic

Databases come from the variables the services read (HOLD_DATABASE_URL, PAYMENT_DATABASE_URL,
VOUCHER_DATABASE_URL, NOTIFIER_DATABASE_URL; .env), the broker from KAFKA_BOOTSTRAP_SERVERS.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

import asyncpg
from aiokafka.errors import KafkaError

from ticketing.cli import booking, dev, dlq, stores


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ticketing", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {metadata.version('ticketing')}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (dev, stores, dlq, booking):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (asyncpg.PostgresError, KafkaError, OSError, ValueError) as exc:  # say it in one line, no traceback
        print(f"ticketing {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
