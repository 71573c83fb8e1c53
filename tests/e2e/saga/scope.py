"""What the checker looks at (which showtimes and vouchers) and where it reads it from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ticketing.events import BOOKING_EVENTS, VOUCHER_RESERVED

from .offsets import Offsets

GROUPS = {"hold": "hold-service.payments", "pay": "payment-service.booking-events", "voucher": "voucher-service",
          "notifier": "notifier"}


def consumer_groups(prefix: str, services: tuple[str, ...] = tuple(GROUPS)) -> dict[str, list[str]]:
    """topic -> the Kafka group ids the services' consumers use under KAFKA_GROUP_PREFIX `prefix`."""
    on_topic = {BOOKING_EVENTS: [f"{prefix}{GROUPS[s]}" for s in services if s in GROUPS]}
    if "voucher" in services:
        on_topic[VOUCHER_RESERVED] = [f"{prefix}voucher-writer"]
    return on_topic


@dataclass(frozen=True)
class Scope:
    """The run's showtimes and vouchers; None = every one in the database (a `make demo` stack)."""

    showtimes: set[int] | None = None
    vouchers: set[str] | None = None


@dataclass(frozen=True)
class Sources:
    dsn: dict[str, str]  # hold, payment, voucher, notifier -> that role's DSN (each sees its own schema)
    hold_url: str
    sim_url: str
    bootstrap: str
    groups: dict[str, list[str]]  # topic -> the consumer groups of the stack under test
    group_prefix: str = ""  # dead letters are ours when their dlq.consumer starts with it
    mail_dir: Path | None = None
    # topic -> offsets read from; events of the scope cannot be older than the run (default: the beginning)
    start_offsets: dict[str, Offsets] = field(default_factory=dict)
    # The notifier's log: the Message-IDs it sent (action=email.sent). None = every SENT e-mail must be in
    # mail_dir. A test database is shared with other runs' notifiers, whose senders may claim our rows
    # (FOR UPDATE SKIP LOCKED) and deliver them to their own sink.
    sent_log: Path | None = None
    jwt_secret: str | None = None  # only to read a seat map that (wrongly) asks for a token
    cents_per_point: int = 100
    # The stack's HOLD_MAX_SECONDS and PAYMENT_CONFIRM_GRACE_SECONDS: how long a hold may live, and how late
    # a payment accepted in time may be applied and still book (saga/timing.py).
    hold_max_seconds: float = 1200.0
    confirm_grace_seconds: float = 120.0
