"""hold-service's events of a showtime's waiting room: it turned on or off, and why (key `showtime:<id>`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ticketing.envelope import Envelope, Model

_REASON = ("ARRIVALS: customers new to the showtime per minute reached the room's threshold; ACTIVE: customers "
           "active at it at once did; OPERATOR: an operator forced it (mode on or off); RUSH_OVER: the rush of an "
           "automatic room has been over for a while and its queue has drained.")


class WaitingRoomChangeData(Model):
    """Why the room changed, and how many customers it lets choose seats at once."""

    reason: Literal["ARRIVALS", "ACTIVE", "OPERATOR", "RUSH_OVER"] = Field(description=_REASON)
    activeLimit: int = Field(description="Customers the room lets choose seats at once.")


class WaitingRoomOpened(Envelope):
    """hold-service: the showtime's waiting room turned on: a hold now needs an admission token (holds taken
    before stay). Keyed `showtime:<showtimeId>`."""

    type: Literal["WaitingRoomOpened"] = "WaitingRoomOpened"
    showtimeId: int
    data: WaitingRoomChangeData


class WaitingRoomClosed(Envelope):
    """hold-service: the showtime's waiting room turned off: holds need no admission token any more. Keyed
    `showtime:<showtimeId>`."""

    type: Literal["WaitingRoomClosed"] = "WaitingRoomClosed"
    showtimeId: int
    data: WaitingRoomChangeData
