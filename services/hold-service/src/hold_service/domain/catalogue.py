"""What's on and my bookings: the questions and the answers' shapes. Pure, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from hold_service.domain.errors import InvalidSeats
from hold_service.domain.model import Hold

DEFAULT_SPAN = timedelta(days=7)
MAX_SPAN = timedelta(days=62)


@dataclass(frozen=True)
class CatalogueQuery:
    """The showtimes starting in [starts_from, until), of one cinema or of all (None); with `after`, only those
    listed after that one (its start and id: the answers are ordered by both, so a page ends on one)."""

    starts_from: datetime
    until: datetime
    cinema: str | None = None
    after: tuple[datetime, int] | None = None

    @classmethod
    def of(cls, now: datetime, starts_from: datetime | None, until: datetime | None,
           cinema: str | None, after: tuple[datetime, int] | None = None) -> CatalogueQuery:
        """Without `from`: now, to the minute (so that the answers of one minute are one cached page); without
        `to`: a week after `from`. A span that is empty or longer than MAX_SPAN is refused."""
        start = starts_from or now.replace(second=0, microsecond=0)
        end = until or start + DEFAULT_SPAN
        if not start < end <= start + MAX_SPAN:
            raise InvalidSeats(f"`to` must be after `from`, at most {MAX_SPAN.days} days after it")
        return cls(start, end, cinema or None, after)

    def next_page(self) -> str:
        """The query string of the page after this one, up to its `after=`, which the answer completes with the
        last showtime listed (`cursor`): the window is the same whatever the time is when it is read."""
        asked = {"from": self.starts_from.isoformat(), "to": self.until.isoformat()}
        return urlencode({**asked, "cinema": self.cinema} if self.cinema else asked) + "&after="


def cursor(starts_at: datetime, showtime_id: int) -> str:
    """A showtime's place in the catalogue's order, as `after` names it: its start (UTC, to the microsecond,
    as sql/holds.sql's catalogue writes it) and its id."""
    return f"{starts_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}_{showtime_id}"


def parse_cursor(raw: str) -> tuple[datetime, int]:
    """`cursor`'s text back; ValueError when it is not one."""
    start, _, showtime_id = raw.partition("_")
    moment = datetime.fromisoformat(start)
    if moment.tzinfo is None or not showtime_id.isascii() or not showtime_id.isdigit() or len(showtime_id) > 18:
        raise ValueError(raw)  # an id is a BIGINT: 18 digits always fit
    return moment, int(showtime_id)


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
