"""The seat maps' ports: what the API processes keep of each showtime's map, and a stream of its changes
(adapters/seat_maps.py implements them; Deps in ports.py holds one)."""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class SeatMapView:
    """A seat map ready to send: the contract's JSON body of `GET /showtimes/{id}/seats` at `version`."""

    version: int
    body: bytes


class SeatMapSubscription(abc.ABC):
    """One client's stream of a showtime's seat map: `snapshot`, then every later version in order."""

    __slots__ = ()  # thousands per process: no per-instance dict
    closed: str | None  # why it ended (the client left, it fell behind, a reset, a shutdown); None: open

    @abc.abstractmethod
    def take_snapshot(self) -> SeatMapView:
        """The map at subscription, once: the subscription keeps it no longer (an idle stream holds no map)."""

    @abc.abstractmethod
    async def next(self) -> bytes | None:
        """The Server-Sent Events frames to send next (changes, heartbeats), joined; None once closed."""

    @abc.abstractmethod
    def sending(self, started: bool) -> None:
        """Around each write to the client: a write that does not finish is how a slow client shows."""

    @abc.abstractmethod
    def close(self, reason: str) -> None: ...


class SeatMaps(abc.ABC):
    """The public seat maps, kept by each API process from the seat changes (no Postgres per read)."""

    @abc.abstractmethod
    async def get(self, showtime_id: int) -> SeatMapView | None:
        """None: no such showtime."""

    def cached(self, showtime_id: int) -> bool:
        """Whether `get` answers now from memory, with no I/O (the shedder serves such a read at any load)."""
        return False

    @abc.abstractmethod
    async def subscribe(self, showtime_id: int, address: str) -> SeatMapSubscription | None:
        """None: no such showtime. Raises TooManyStreams when `address` (the client's) has its limit open,
        ConnectionError (503) while this process cannot follow the changes."""
