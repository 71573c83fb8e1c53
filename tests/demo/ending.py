"""When the sale is sold out, agreed by every customer process and the customers who cancel their bookings.

Each process watches the seat maps, and its customers stop shopping once it sees every seat BOOKED. A customer
who cancels his booking gives seats back; had a process seen "sold out" while his cancellation was on its way,
its customers would have left, and his seats would stay unsold. So the ending is decided in one place shared by
the processes:

    a canceller          under the lock: if the sale is sold out, he keeps his booking; else he is in flight
                         ... looks at the seat maps, cancels ...
                         under the lock: no longer in flight, one more cancellation done
    a watcher            notes the cancellations in flight and done, reads every seat map, then under the lock
                         declares the sale sold out only if every seat was BOOKED, none was in flight before or
                         after the read and none ended in between

A cancellation that frees seats commits while its canceller is in flight, so a read that declares the sale sold
out saw its seats freed and sold again, or came after a cancellation that saw the sale sold out and kept.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass, field
from typing import Any

SOLD_OUT, IN_FLIGHT, DONE = range(3)


@dataclass(frozen=True)
class Mark:
    """The cancellations in flight and done when a watcher began its read."""

    in_flight: int
    done: int


@dataclass
class SaleEnd:
    """Shared by the demo's processes (handed to each as it starts)."""

    lock: Any = field(default_factory=lambda: mp.get_context("spawn").Lock())
    state: Any = field(default_factory=lambda: mp.get_context("spawn").Array("q", 3, lock=False))

    def mark(self) -> Mark:
        with self.lock:
            return Mark(self.state[IN_FLIGHT], self.state[DONE])

    def settle(self, mark: Mark, every_seat_booked: bool) -> bool:
        """Whether the sale is sold out, given a read begun at `mark` that saw `every_seat_booked`."""
        with self.lock:
            if (
                not self.state[SOLD_OUT]
                and every_seat_booked
                and mark == Mark(0, self.state[DONE])
                and self.state[IN_FLIGHT] == 0
            ):
                self.state[SOLD_OUT] = 1
            return bool(self.state[SOLD_OUT])

    def begin_cancel(self) -> bool:
        """A customer is about to look at the seat maps and cancel: False when the sale is already sold out."""
        with self.lock:
            if self.state[SOLD_OUT]:
                return False
            self.state[IN_FLIGHT] += 1
            return True

    def end_cancel(self) -> None:
        with self.lock:
            self.state[IN_FLIGHT] -= 1
            self.state[DONE] += 1
