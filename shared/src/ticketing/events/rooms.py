"""hold-service's events of a showtime's waiting room: it turned on or off, and why (key `showtime:<id>`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ticketing.envelope import Envelope, Model

_LIMIT = "Customers the room lets choose seats at once."


class WaitingRoomOpenedData(Model):
    """Why the room turned on: a hold now needs an admission token (holds taken before stay)."""

    reason: Literal["ARRIVALS", "ACTIVE", "OPERATOR"] = Field(
        description="ARRIVALS: the customers new to the showtime in the last minute reached the room's threshold "
                    "(mode auto); ACTIVE: the customers active at it at once did (mode auto); OPERATOR: an "
                    "operator turned it on (mode on).")
    activeLimit: int = Field(description=_LIMIT)


class WaitingRoomClosedData(Model):
    """Why the room turned off: holds need no admission token any more."""

    reason: Literal["OPERATOR", "RUSH_OVER"] = Field(
        description="OPERATOR: an operator turned it off (mode off); RUSH_OVER: the rush of an automatic room has "
                    "been over for WAITING_ROOM_AUTO_CLOSE_AFTER_SECONDS and its queue has drained.")
    activeLimit: int = Field(description=_LIMIT)


class WaitingRoomOpened(Envelope):
    """hold-service: the showtime's waiting room turned on (key `showtime:<showtimeId>`: it concerns no one
    booking, and so carries no bookingId or customerId)."""

    type: Literal["WaitingRoomOpened"] = "WaitingRoomOpened"
    showtimeId: int
    data: WaitingRoomOpenedData


class WaitingRoomClosed(Envelope):
    """hold-service: the showtime's waiting room turned off (key `showtime:<showtimeId>`)."""

    type: Literal["WaitingRoomClosed"] = "WaitingRoomClosed"
    showtimeId: int
    data: WaitingRoomClosedData
