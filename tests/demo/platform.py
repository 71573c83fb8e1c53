"""Where the demo runs: the `make up` stack on its fixed ports, or a stack of its own (tests/e2e/stack.py).

`make up` runs with the production timings of docs/configuration.md (holds last 600 s) unless it was started
with shorter ones (`HOLD_TTL_SECONDS=15 ... make up`, docs/demo.md). A stack of its own runs on free
ports against the test database with the demo's timings, so every part of the cast (late payers, customers
who walk away) plays within a minute; that is what `make test` runs, beside other tests. Both run hold-service's
rate limits as deployed (per customer, per address, seat-map streams per address; voucher quotes per customer):
the demo's customers come from many addresses (addresses.py), as a real sale's do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from dotenv import dotenv_values
from ticketing.events import BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ
from ticketing.testing import apply_migrations, shared_migrations, test_dsn

from ..e2e.saga.offsets import KafkaView, Offsets
from ..e2e.saga.scope import Sources, consumer_groups
from ..e2e.stack import Stack, Timings, start_stack

ROOT = Path(__file__).resolve().parents[2]
MAKE_UP = {"hold": "http://127.0.0.1:8001", "pay": "http://127.0.0.1:8002", "voucher": "http://127.0.0.1:8003",
           "notifier": "http://127.0.0.1:8004", "sim": "http://127.0.0.1:8010"}
DSN_VARIABLES = {"hold": "HOLD_DATABASE_URL", "payment": "PAYMENT_DATABASE_URL", "voucher": "VOUCHER_DATABASE_URL",
                 "notifier": "NOTIFIER_DATABASE_URL"}
DEMO_HOLD_TTL = 15.0


def demo_timings(hold_ttl: float = DEMO_HOLD_TTL) -> Timings:
    """Holds and sessions short enough that late payers and customers who walk away play within the minute;
    a checkout extends its hold past the session by a fifth of a hold (the grace), within two holds' time."""
    return Timings(hold_ttl=hold_ttl, session_ttl=int(hold_ttl), sweep_interval=1, reconcile_after=int(hold_ttl) + 5,
                   reconcile_interval=2, voucher_ttl=2 * hold_ttl, voucher_sweep_interval=2, hold_max=2 * hold_ttl,
                   confirm_grace=hold_ttl / 5, min_session=hold_ttl / 5)


@dataclass
class Platform:
    """The URLs and the readers the demo and the checker need, wherever the platform runs."""

    name: str  # "make up" or "own stack"
    url: dict[str, str]  # hold, pay, voucher, sim
    dsn: dict[str, str]  # hold, payment, voucher, notifier
    jwt_secret: str
    bootstrap: str
    group_prefix: str
    mail_dir: Path
    sent_log: Path | None = None
    stack: Stack | None = None
    started_in: float = 0.0

    def sources(self, start_offsets: dict[str, Offsets]) -> Sources:
        services = self.stack.services if self.stack else ("hold", "pay", "voucher", "notifier")
        settings = _settings()  # make up's own timings, unless this is a stack of the demo's
        hold_max = self.stack.timings.hold_max if self.stack else float(settings.get("HOLD_MAX_SECONDS", 1200))
        grace = self.stack.timings.confirm_grace if self.stack else float(
            settings.get("PAYMENT_CONFIRM_GRACE_SECONDS", 120))
        return Sources(dsn=self.dsn, hold_url=self.url["hold"], sim_url=self.url["sim"], bootstrap=self.bootstrap,
                       groups=consumer_groups(self.group_prefix, services), group_prefix=self.group_prefix,
                       mail_dir=self.mail_dir, start_offsets=start_offsets, sent_log=self.sent_log,
                       jwt_secret=self.jwt_secret, hold_max_seconds=hold_max, confirm_grace_seconds=grace)


def _settings() -> dict[str, str]:
    dotenv = {k: v for k, v in dotenv_values(ROOT / ".env").items() if v is not None}
    return {**dotenv, **{k: v for k, v in os.environ.items() if v}}


def make_up_running(url: dict[str, str] = MAKE_UP) -> bool:
    """Every API of make up answers its readiness probe."""
    try:
        return all(httpx.get(f"{url[n]}/readyz", timeout=2).status_code == 200 for n in ("hold", "pay", "voucher"))
    except httpx.HTTPError:
        return False


def make_up() -> Platform:
    env = _settings()
    return Platform(name="make up", url=dict(MAKE_UP), dsn={k: env[v] for k, v in DSN_VARIABLES.items()},
                    jwt_secret=env.get("JWT_SECRET", "dev-only-change-me"),
                    bootstrap=env.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                    group_prefix=env.get("KAFKA_GROUP_PREFIX", ""), mail_dir=ROOT / "var" / "mail")


@contextmanager
def own_stack(logs: Path, timings: Timings) -> Iterator[Platform]:
    """Every service as a real process on free ports, the test database migrated first (stack.py)."""
    env = _settings()

    def migrated_dsn(variable: str, folder: Path) -> str:
        dsn = test_dsn(env[variable])
        apply_migrations(dsn, shared_migrations(), folder)
        return dsn

    mail = logs / "mail"
    mail.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with start_stack(migrated_dsn, bootstrap=env.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                     redis_url=env.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                     jwt_secret=env.get("JWT_SECRET", "dev-only-change-me"), mail_dir=mail, logs=logs,
                     timings=timings, hold_limits={}) as stack:
        yield Platform(name="own stack", url=stack.url, dsn=stack.dsn, jwt_secret=stack.jwt_secret,
                       bootstrap=stack.bootstrap, group_prefix=stack.group_prefix, mail_dir=mail,
                       sent_log=stack.procs["notifier-worker"].log_path, stack=stack,
                       started_in=time.monotonic() - began)


async def end_offsets(bootstrap: str) -> dict[str, Offsets]:
    """Where the topics end now: nothing of this sale is older (the checker reads from here)."""
    async with KafkaView(bootstrap) as kafka:
        return {t: await kafka.end_offsets(t) for t in (BOOKING_EVENTS, BOOKING_EVENTS_DLQ, VOUCHER_RESERVED_DLQ)}
