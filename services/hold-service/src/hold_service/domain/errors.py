"""What can go wrong with a hold, in domain terms (the API maps each to the contract's codes)."""

from __future__ import annotations

from datetime import datetime


class HoldError(Exception):
    """Base of every domain refusal."""


class InvalidSeats(HoldError):
    def __init__(self, message: str, seats: list[str] | None = None) -> None:
        super().__init__(message)
        self.seats = seats or []


class UnpricedTickets(HoldError):
    """A ticket type the showtime has no price for in a seat's category, or a category used without an ADULT
    price."""

    def __init__(self, message: str, seats: list[str] | None = None) -> None:
        super().__init__(message)
        self.seats = seats or []


class ShowtimeClosed(HoldError):
    """The showtime sells nothing now: its sales closed before its start, or it was cancelled."""


class CancellationClosed(HoldError):
    """Too late to cancel the booking: its showtime starts within CANCELLATION_DEADLINE_MINUTES."""


class ShowtimeNotFound(HoldError):
    pass


class ShowtimeExists(HoldError):
    pass


class SeatsUnavailable(HoldError):
    """`together` False: best available found no run of that many seats side by side (`seats` is then [])."""

    def __init__(self, seats: list[str], decided_by: str = "postgres", together: bool | None = None) -> None:
        super().__init__(f"seats {', '.join(seats)} are not available" if seats or together is None
                         else "no seats of that category are free side by side")
        self.seats, self.decided_by, self.together = seats, decided_by, together


class LoneSeat(HoldError):
    """The showtime's no-lone-seat rule: the hold would leave `lone` free alone; `suggested` would not."""

    def __init__(self, lone: list[str], suggested: list[str]) -> None:
        super().__init__(f"the hold would leave seat {', '.join(lone)} alone: pick seats beside it or others")
        self.lone, self.suggested = lone, suggested


class HoldNotFound(HoldError):
    pass


class HoldNotActive(HoldError):
    pass


class TooManySeatsHeld(HoldError):
    """OWASP OAT-021 denial of inventory: the customer already holds too many seats of this showtime."""

    def __init__(self, held: int, cap: int, retry_after: int) -> None:
        super().__init__(f"you already hold {held} seats of this showtime (at most {cap} at once)")
        self.retry_after = retry_after


class RateLimited(HoldError):
    def __init__(self, retry_after: int) -> None:
        super().__init__("too many holds, slow down")
        self.retry_after = retry_after


class TooManyStreams(HoldError):
    """The client's address has SEAT_MAP_MAX_STREAMS_PER_ADDRESS seat-map streams open already."""

    retry_after = 10

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} seat-map streams at once per client address")


class IdempotencyKeyReused(HoldError):
    pass


# The waiting room (domain/waiting_room.py).


class AdmissionRequired(HoldError):
    """The showtime's waiting room is on and the request carries no valid admission of this customer."""


class RoomNotFound(HoldError):
    """The showtime has no waiting room turned on (or does not exist)."""


class TicketNotFound(HoldError):
    """Not a ticket of this customer, or one whose place has ended (admission over, dropped)."""


class QueueUnavailable(HoldError):
    """Redis, where the queue lives, cannot be reached: the room pauses, the customer retries."""


# The door (domain/door.py).


class DoorRefusal(HoldError):
    """A scan the door does not admit."""


class TicketInvalid(DoorRefusal):
    """Not a ticket we signed: malformed, tampered, signed by another key, or naming no booking."""


class TicketRevoked(DoorRefusal):
    """The booking was cancelled (by its customer, or with its showtime) and refunded: its ticket admits no one."""


class WrongShowtime(DoorRefusal):
    """A genuine ticket, of another showtime than the one the door is checking in."""


class TooEarly(DoorRefusal):
    """The showtime's check-in has not opened yet (CHECKIN_OPENS_MINUTES before the start)."""


class CheckinClosed(DoorRefusal):
    """The showtime has ended: its tickets admit no one any more."""


class InvalidScan(DoorRefusal):
    """An offline scan that cannot be judged (its time is in the future)."""


class AlreadyCheckedIn(DoorRefusal):
    """The booking's group was admitted already: when and where."""

    def __init__(self, at: datetime, door: str) -> None:
        super().__init__(f"this ticket was admitted at door {door}")
        self.at, self.door = at, door
