"""Check the booking saga of a running stack (after `make up` and a demo, or any manual session).

    .venv/bin/python -m tests.e2e.saga                         # every showtime and voucher of the dev database
    .venv/bin/python -m tests.e2e.saga --showtimes 42,43 --vouchers FLASH100

Reads the four schemas with the roles' DSNs of .env (or the environment), booking-events and the DLQs from
Kafka, the gateway simulator's sessions, the seat maps and the SMTP sink's folder. Waits for rest first
(nothing HELD or PENDING, outboxes drained, consumer groups caught up). Exit status 1 when any invariant fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from dotenv import dotenv_values

from . import check
from .history import History
from .scope import Scope, Sources, consumer_groups

ROOT = Path(__file__).resolve().parents[3]
DSN = {"hold": "HOLD_DATABASE_URL", "payment": "PAYMENT_DATABASE_URL", "voucher": "VOUCHER_DATABASE_URL",
       "notifier": "NOTIFIER_DATABASE_URL"}


def _setting(env: dict[str, str], name: str, default: str = "") -> str:
    return os.environ.get(name) or env.get(name) or default


def _ids(text: str | None) -> set[str] | None:
    return None if not text or text == "all" else {t.strip() for t in text.split(",") if t.strip()}


def sources_from(args: argparse.Namespace) -> Sources:
    env = {k: v for k, v in dotenv_values(args.env_file).items() if v is not None}
    prefix = _setting(env, "KAFKA_GROUP_PREFIX")
    return Sources(dsn={k: _setting(env, v) for k, v in DSN.items()}, hold_url=args.hold_url, sim_url=args.sim_url,
                   bootstrap=_setting(env, "KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                   groups=consumer_groups(prefix), group_prefix=prefix,
                   mail_dir=Path(args.mail_dir) if args.mail_dir else None, jwt_secret=_setting(env, "JWT_SECRET"),
                   hold_max_seconds=float(_setting(env, "HOLD_MAX_SECONDS", "1200")),
                   confirm_grace_seconds=float(_setting(env, "PAYMENT_CONFIRM_GRACE_SECONDS", "120")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.saga", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--showtimes", help="comma-separated showtime ids, or 'all' (default)")
    parser.add_argument("--vouchers", help="comma-separated voucher codes, or 'all' (default)")
    parser.add_argument("--env-file", default=str(ROOT / ".env"))
    parser.add_argument("--hold-url", default="http://127.0.0.1:8001")
    parser.add_argument("--sim-url", default="http://127.0.0.1:8010")
    parser.add_argument("--mail-dir", default=str(ROOT / "var" / "mail"), help="the SMTP sink's folder ('' = skip)")
    parser.add_argument("--rest-timeout", type=float, default=120.0, help="seconds to wait for rest")
    parser.add_argument("--history", help="a journey run's history.jsonl: adds the checks of what callers saw")
    args = parser.parse_args(argv)
    showtimes = _ids(args.showtimes)
    scope = Scope(showtimes={int(s) for s in showtimes} if showtimes is not None else None,
                  vouchers=_ids(args.vouchers))
    history = History.load(Path(args.history)) if args.history else None
    verdict = asyncio.run(check(scope, sources_from(args), history, rest_timeout=args.rest_timeout))
    print(verdict.report(samples=None))
    return 1 if verdict.violations else 0


if __name__ == "__main__":
    sys.exit(main())
