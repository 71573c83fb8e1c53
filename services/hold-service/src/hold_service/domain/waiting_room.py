"""The waiting room of a hot showtime: what a room is, what a customer holds in it, what a poll tells him.

Pure: the queue lives in Redis and the configuration in Postgres (adapters); this decides nothing that needs
either. Times are epoch milliseconds, the queue's own clock (Redis TIME) unless said otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from hold_service.domain.room_rush import RoomMode, Thresholds

QueueState = Literal["pre", "queued", "admitted", "restoring", "gone"]


def to_ms(t: datetime | None) -> int:
    """0 stands for "no time" (a room without an opening time is open)."""
    return 0 if t is None else int(t.timestamp() * 1000)


def from_ms(ms: int) -> datetime | None:
    return None if ms <= 0 else datetime.fromtimestamp(ms / 1000, UTC)


@dataclass(frozen=True)
class RoomConfig:
    """The operator's decision, kept in Postgres."""

    showtime_id: int
    enabled: bool
    active_limit: int
    opens_at: datetime | None  # None: open as soon as enabled
    starts_at: datetime | None = None  # the showtime's start (None: not known here)
    cancelled: bool = False  # the showtime was cancelled
    mode: RoomMode = "on"  # on / off: forced by the operator; auto: `enabled` follows the rush (room_rush.py)
    open_at_arrivals: int | None = None  # the automatic mode's thresholds (None: the deployment's defaults)
    open_at_active: int | None = None
    changed_reason: str | None = None  # why `enabled` last changed: ARRIVALS, ACTIVE, OPERATOR, RUSH_OVER
    changed_at: datetime | None = None

    def thresholds(self, defaults: Thresholds) -> Thresholds:
        return Thresholds(self.open_at_arrivals or defaults.arrivals_per_minute,
                          self.open_at_active or defaults.active)

    def on_sale(self, now: datetime, close_minutes: float) -> bool:
        """As on_sale (sql/schema.sql) decides: not cancelled, and before the start less `close_minutes`."""
        return not self.cancelled and (self.starts_at is None
                                       or now < self.starts_at - timedelta(minutes=close_minutes))


@dataclass(frozen=True)
class RoomFacts:
    """What an admission step decides on, read fresh from Postgres (one query per step)."""

    config: RoomConfig
    lease_ms: int  # no admission token of the room expires after this (0: none issued yet)
    seed: str | None  # the opening's shuffle seed, once fixed
    available: int  # seats a newcomer could get now (lazy expiry applied)
    held: int  # seats in live holds (they may come back)
    holders: list[int]  # customers with live holds (an admitted customer who holds seats is paying, not choosing)
    started: bool = True  # the room's queue was set up in Redis before (so setting it up again is a rebuild)

    @property
    def sold_out(self) -> bool:
        """Every seat is BOOKED: nothing can come back, the queue is told at once."""
        return self.available == 0 and self.held == 0


def is_visitor(customer_id: int) -> bool:
    """A ticket joined without a customer's token carries a random negative id of its own (a visitor)."""
    return customer_id < 0


@dataclass(frozen=True)
class Ticket:
    """A customer's place in a room's queue. Handed out signed (adapters), so it is unguessable and carries
    what is needed to give the customer his place back after Redis lost the queue."""

    showtime_id: int
    customer_id: int
    nonce: str  # tells this ticket from the customer's earlier ones in the same room
    joined_us: int  # when he joined, in microseconds: his place (first come, first served)


@dataclass(frozen=True)
class AdmissionPass:
    """What a valid admission token says: this customer may choose seats of this showtime until `slot_ms`."""

    customer_id: int
    showtime_id: int
    slot_ms: int  # the end of his slot; the token expires then too

    def admits(self, customer_id: int, showtime_id: int) -> bool:
        return self.customer_id == customer_id and self.showtime_id == showtime_id


@dataclass(frozen=True)
class QueueView:
    """One poll's answer from the queue, before it is put in words for the customer."""

    state: QueueState
    position: int | None  # 1 = next; None before the opening (the shuffle decides then)
    slot_ms: int  # admitted: the end of the slot
    sold_out: bool
    rate_per_minute: float  # admissions measured over the last minute (0: none measured yet)
    paused_until_ms: int
    now_ms: int
    step_due: bool  # this poll took the room's next admission step: its caller runs it


@dataclass(frozen=True)
class QueueStatus:
    """GET /queue/{ticket}."""

    admitted: bool
    position: int | None = None
    estimated_wait_seconds: int | None = None
    admission_token: str | None = None
    expires_at: datetime | None = None
    sold_out: bool = False
    opens_at: datetime | None = None
    sign_in: bool = False  # admitted, but the ticket is a visitor's: a customer's token claims it



@dataclass(frozen=True)
class StepOutcome:
    """What one admission step did, and the room's figures after it (for operators and metrics)."""

    admitted: int
    dropped: int  # queued customers who stopped polling, or admitted ones who never came for their token
    queued: int
    active: int
    rate_per_minute: float
    sold_out: bool


def estimated_wait(view: QueueView, config: RoomConfig, slot_seconds: float) -> int | None:
    """Seconds until the customer is likely admitted; None when it will not happen (sold out).

    From the measured admission rate; before any is measured, from the slowest the queue can move while
    seats remain: every slot frees at the latest when its token lapses (`active_limit` per `slot_seconds`).
    A pause (Redis lost the room, see service_layer/room_steps.py) and the time to the opening add to it.
    """
    if view.sold_out:
        return None
    wait = max(0, view.paused_until_ms - view.now_ms) / 1000
    if config.opens_at is not None:
        wait = max(wait, (to_ms(config.opens_at) - view.now_ms) / 1000)
    if view.position is not None:
        per_second = view.rate_per_minute / 60 or config.active_limit / slot_seconds
        wait += view.position / per_second
    return max(0, math.ceil(wait))


@dataclass(frozen=True)
class Joined:
    """POST /showtimes/{id}/queue: the customer's ticket (the one he had, if it is still live)."""

    ticket: Ticket
    position: int | None  # None before the opening; 0 when already admitted
    sold_out: bool
    opens_at: datetime | None = None


@dataclass(frozen=True)
class RoomFigures:
    """A room's figures as its last admission step left them (the operator's view, the metrics)."""

    queued: int
    active: int
    admitted_total: int
    rate_per_minute: float
    sold_out: bool
    available: int
    held: int
    opened: bool
    paused_until_ms: int
