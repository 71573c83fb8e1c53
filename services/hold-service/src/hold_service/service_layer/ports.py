"""What the handlers need from the outside world: abstract ports, and `Deps`, built in bootstrap.py.

Admission's port (and its Admitted, Ended, GateSeat) lives in admission_ports.py and is named here too.

Adapters (adapters/) implement these with Postgres and Redis; unit tests subclass them with in-memory
fakes (tests/fakes/). The service layer imports nothing else of the outside world (an import-linter
contract says so).
"""

from __future__ import annotations

import abc
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ticketing.tickets import TicketKeyring
from ticketing.unit_of_work import UnitOfWork

from hold_service.config import HoldSettings
from hold_service.domain.catalogue import BookingView, CatalogueQuery
from hold_service.domain.hall import SeatPlace, ShowtimeDetails
from hold_service.domain.model import BestSeats, Hold, TakeSeats, Verdict
from hold_service.service_layer.admission_ports import Admission, Admitted, Ended, GateSeat
from hold_service.service_layer.door_ports import DoorRepository
from hold_service.service_layer.room_ports import Credentials, RoomQueue, RoomStore
from hold_service.service_layer.seat_map_ports import SeatMaps


@dataclass(frozen=True)
class Released:
    """What ending a hold did: `freed` are the seats it still held (SeatsReleased names only those)."""

    hold_id: uuid.UUID
    showtime_id: int
    seats: list[str]
    reason: str  # CANCELLED | EXPIRED
    freed: list[str]


@dataclass(frozen=True)
class Backlog:
    """Expired holds still HELD: how many, and how long ago the oldest expired (0 when none)."""

    holds: int
    oldest_seconds: float


@dataclass(frozen=True)
class Cancellation:
    """What cancelling a booking did: `outcome` CANCELLED (now), ALREADY, NOT_BOOKED, TOO_LATE or NOT_FOUND."""

    outcome: str
    hold_id: uuid.UUID | None = None
    showtime_id: int | None = None
    seats: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Extension:
    """What extending a live hold did."""

    expires_at: datetime  # its expiry now (moved or not)
    moved: bool  # False: it lasted that long already, or its cap (creation + HOLD_MAX_SECONDS) was reached
    closed: bool = False  # the showtime's sales are closed: nothing changed


class HoldRepository(abc.ABC):
    @abc.abstractmethod
    async def add_showtime(self, details: ShowtimeDetails, places: list[SeatPlace]) -> bool:
        """False when the showtime exists."""

    @abc.abstractmethod
    async def adopt_currency(self, currency: str) -> None:
        """Showtimes without a currency (the previous release's, during an upgrade) get this one."""

    @abc.abstractmethod
    async def catalogue(self, query: CatalogueQuery, close_minutes: float, limit: int, next_page: str) -> bytes:
        """GET /showtimes's JSON body: `{"showtimes": [...], "next": ...}` ordered by start and id, at most
        `limit`; `next` is `next_page` followed by the last one's `cursor` when more follow, else null."""

    @abc.abstractmethod
    async def bookings_of(self, customer_id: int, limit: int) -> list[BookingView]:
        """The customer's bookings, newest first, at most `limit`."""

    @abc.abstractmethod
    async def get(self, hold_id: uuid.UUID) -> Hold | None:
        """With its status as customers see it (EXPIRED when its time passed)."""

    @abc.abstractmethod
    async def lock_by_booking(self, booking_id: uuid.UUID) -> Hold | None:
        """The hold of a booking, locked to the end of the transaction."""

    @abc.abstractmethod
    async def release(self, hold_id: uuid.UUID, reason: str) -> Released | None:
        """End a HELD hold (reason CANCELLED unless it expired); None when it was not HELD."""

    @abc.abstractmethod
    async def cancel_booking(self, booking_id: uuid.UUID, reason: str, deadline_minutes: float) -> Cancellation:
        """A BOOKED booking becomes CANCELLED, its seats AVAILABLE, with BookingCancelled{reason}; a customer's
        (reason CUSTOMER) only until `deadline_minutes` before the start."""

    @abc.abstractmethod
    async def cancel_showtime(self, showtime_id: int, reason: str) -> bool | None:
        """The showtime is CANCELLED from now on: True when this call did it, False when it was already,
        None when there is no such showtime."""

    @abc.abstractmethod
    async def cancelled_with_live(self, limit: int) -> list[int]:
        """Cancelled showtimes with a HELD hold or a BOOKED booking left."""

    @abc.abstractmethod
    async def live_of_showtime(self, showtime_id: int, limit: int) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
        """(hold id, booking id, status) of the showtime's HELD holds and BOOKED bookings."""

    @abc.abstractmethod
    async def sweep_expired(self, limit: int) -> list[Released]:
        """End up to `limit` expired holds nobody else is working on, oldest first (what release() does for
        each, in one statement); [] when there is none."""

    @abc.abstractmethod
    async def expired_backlog(self) -> Backlog:
        """The holds whose time has passed that are still HELD (the sweeper's backlog)."""

    @abc.abstractmethod
    async def confirm(self, hold_id: uuid.UUID, payment_id: uuid.UUID, paid_cents: int) -> bool:
        """Book a live HELD hold and record BookingConfirmed; False (nothing changed) when it is not bookable."""

    @abc.abstractmethod
    async def extend(self, hold_id: uuid.UUID, until: datetime, max_seconds: float,
                     close_minutes: float = 0) -> Extension | None:
        """A HELD, live hold lasts until max(its expiry, until), never past its creation + `max_seconds`;
        None (and nothing changed) when it is not HELD and live; `closed` (nothing changed) when its showtime
        is no longer on sale (`close_minutes` before the start, or cancelled)."""

    @abc.abstractmethod
    async def gate_seats(self, showtime_id: int) -> list[GateSeat] | None:
        """The seats live holds hold and the BOOKED seats of a showtime on sale; None when it is not."""

    @abc.abstractmethod
    async def emit(self, event: Any) -> None:
        """An event of the catalogue to the outbox, in this transaction."""


class IdempotencyRepository(abc.ABC):
    @abc.abstractmethod
    async def claim(self, customer_id: int, key: str, fingerprint: str) -> dict[str, Any] | None:
        """None when this request claimed the key now; else {"fingerprint", "outcome" (None: not yet)}."""

    @abc.abstractmethod
    async def store(self, customer_id: int, key: str, outcome: dict[str, Any]) -> None:
        """Keep the first definitive outcome."""

    @abc.abstractmethod
    async def purge(self, retention_hours: float) -> None: ...


class HoldsUnitOfWork(UnitOfWork):
    holds: HoldRepository
    keys: IdempotencyRepository
    door: DoorRepository


class HoldWriter(abc.ABC):
    """Takes holds in Postgres: one statement per hold, or per batch of holds that arrived together."""

    @abc.abstractmethod
    async def take(self, request: TakeSeats) -> Verdict:
        """Postgres' verdict; raises TooManySeatsHeld when the commit-time cap check refuses."""

    async def take_best(self, request: TakeSeats, best: BestSeats) -> tuple[TakeSeats, Verdict]:
        """Best available: Postgres chooses the seats and takes them in one transaction; the hold as taken
        (its seats and ticket types) with the verdict. Raises SeatsUnavailable(together=False) when no seats
        fit, ShowtimeNotFound, and as take()."""
        raise NotImplementedError("this writer takes picked seats only")


@dataclass
class Deps:
    """Everything a handler may use; one per process, built by bootstrap.py."""

    settings: HoldSettings
    uow: Callable[[], HoldsUnitOfWork]
    # The same repositories with no transaction, each statement committing alone: for the hold path's steps
    # that are one statement each (its Idempotency-Key's claim and store), where BEGIN and COMMIT would double
    # the round trips.
    statements: Callable[[], HoldsUnitOfWork]
    writer: HoldWriter
    admission: Admission
    seat_maps: SeatMaps
    # The waiting room (service_layer/waiting_room.py).
    rooms: RoomStore
    queue: RoomQueue
    credentials: Credentials
    # GET /showtimes's answers this process keeps a moment (service_layer/catalogue.py).
    catalogue_pages: dict[CatalogueQuery, Any] = field(default_factory=dict)
    # Showtime -> when this process last started refilling its seat gate (service_layer/gate_refill.py).
    gate_refills: dict[int, float] = field(default_factory=dict)

    # The time of an online scan at the door (tests: the fakes' clock).
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @functools.cached_property
    def tickets(self) -> TicketKeyring:
        """The key tickets are signed with (QR_SIGNING_KEY) and every key they are verified with."""
        return TicketKeyring.of(self.settings.qr_signing_key, self.settings.qr_verify_keys)


__all__ = ["Admission", "Admitted", "Backlog", "Cancellation", "Deps", "Ended", "Extension", "GateSeat",
           "HoldRepository", "HoldWriter", "HoldsUnitOfWork", "IdempotencyRepository", "Released"]
