"""What's on and my bookings: the questions and the answers' shapes. Pure, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hold_service.domain.errors import InvalidSeats
from hold_service.domain.model import Hold

DEFAULT_SPAN = timedelta(days=7)
MAX_SPAN = timedelta(days=62)


@dataclass(frozen=True)
class CatalogueQuery:
    """The showtimes starting in [starts_from, until), of one cinema or of all (None)."""

    starts_from: datetime
    until: datetime
    cinema: str | None = None

    @classmethod
    def of(cls, now: datetime, starts_from: datetime | None, until: datetime | None,
           cinema: str | None) -> CatalogueQuery:
        """Without `from`: now, to the minute (so that the answers of one minute are one cached page); without
        `to`: a week after `from`. A span that is empty or longer than MAX_SPAN is refused."""
        start = starts_from or now.replace(second=0, microsecond=0)
        end = until or start + DEFAULT_SPAN
        if not start < end <= start + MAX_SPAN:
            raise InvalidSeats(f"`to` must be after `from`, at most {MAX_SPAN.days} days after it")
        return cls(start, end, cinema or None)


@dataclass(frozen=True)
class BookingView:
    """A customer's booking as GET /bookings lists it: the hold and its showtime's details."""

    hold: Hold
    title: str
    starts_at: datetime
    cinema: str | None
    hall: str | None
    time_zone: str
    checked_in_at: datetime | None = None  # when its group was admitted at the door
    currency: str | None = None  # of the showtime's prices (ISO 4217)
