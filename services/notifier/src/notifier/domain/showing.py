"""What a booking is for, as its e-mails describe it: the film, the cinema, the hall, the start and each seat
with its category and ticket type, from BookingConfirmed's ticket details.

The details are optional fields of the event (an older producer does not send them): without them the
e-mails name the showtime by its number and list the seat codes, as before the details existed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from notifier.domain.language import Language


@dataclass(frozen=True)
class TicketLine:
    seat: str
    category: str
    ticket_type: str
    price_cents: int


@dataclass(frozen=True)
class Showing:
    showtime_id: int
    seats: tuple[str, ...]
    title: str | None = None
    cinema: str | None = None
    hall: str | None = None
    starts_at: datetime | None = None
    time_zone: str | None = None
    tickets: tuple[TicketLine, ...] = ()

    @classmethod
    def of(cls, showtime_id: int, data: dict[str, Any]) -> Showing:
        """From a BookingConfirmed's (or BookingCancelled's) `data` as a dict: read by name, so that a payload
        without the details, or a catalogue from before them, gives a Showing without them."""
        starts = data.get("startsAt")
        tickets = tuple(TicketLine(str(t["seat"]), str(t["category"]), str(t["ticketType"]), int(t["priceCents"]))
                        for t in data.get("tickets") or ())
        return cls(showtime_id=showtime_id, seats=tuple(data.get("seats") or ()), title=data.get("title"),
                   cinema=data.get("cinema"), hall=data.get("hall"),
                   starts_at=datetime.fromisoformat(starts) if isinstance(starts, str) else starts,
                   time_zone=data.get("timeZone"), tickets=tickets)

    def describe(self, lang: Language, currency: str) -> str:
        """The lines that say what the booking is for, in the customer's language."""
        _ = lang.gettext
        lines = [_("Film: {title}").format(title=self.title) if self.title
                 else _("Showtime: {showtime}").format(showtime=self.showtime_id)]
        if self.cinema:
            lines.append(_("Cinema: {cinema}").format(cinema=self.cinema))
        if self.hall:
            lines.append(_("Hall: {hall}").format(hall=self.hall))
        if self.starts_at is not None:
            lines.append(_("Starts: {start}").format(start=lang.moment(self.starts_at, self.time_zone)))
        if not self.tickets:
            return "\n".join([*lines, _("Seats: {seats}").format(seats=", ".join(self.seats))]) + "\n"
        lines.append(_("Seats:"))
        for t in self.tickets:
            lines.append("  " + _("{seat}: {category}, {ticket_type}, {price}").format(
                seat=t.seat, category=category_name(t.category, _), ticket_type=ticket_type_name(t.ticket_type, _),
                price=lang.money(t.price_cents, currency)))
        return "\n".join(lines) + "\n"


def category_name(code: str, _: Callable[[str], str]) -> str:
    names = {"STANDARD": _("Standard"), "VIP": _("VIP"), "ACCESSIBLE": _("Wheelchair space"),
             "COMPANION": _("Companion seat")}
    return names.get(code, code)  # a category added later is shown by its code rather than not at all


def ticket_type_name(code: str, _: Callable[[str], str]) -> str:
    names = {"ADULT": _("Adult"), "CHILD": _("Child"), "SENIOR": _("Senior"), "STUDENT": _("Student")}
    return names.get(code, code)
