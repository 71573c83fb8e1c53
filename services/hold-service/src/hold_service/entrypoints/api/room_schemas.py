"""The waiting room's request and response bodies (routes/waiting_room.py; camelCase on the wire). Fields beyond
the first contract's are additive (docs/waiting-room.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from ticketing.api.types import UtcDatetime


class WaitingRoomUpdate(BaseModel):
    """Either `mode` (on, off: forced; auto: the room opens itself at a rush and closes after it) or the first
    form's `enabled` (true: mode on, false: mode off), which needs `activeLimit`."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool | None = None
    mode: Literal["on", "off", "auto"] | None = None
    activeLimit: int | None = Field(default=None, ge=1, le=100_000,
                                    description="Absent with `mode`: WAITING_ROOM_AUTO_ACTIVE_LIMIT.")
    opensAt: UtcDatetime | None = None  # absent: open as soon as enabled
    openAtArrivalsPerMinute: int | None = Field(
        default=None, ge=1, le=100_000_000,
        description="mode auto: open when this many customers new to the showtime came in the last minute "
                    "(absent: WAITING_ROOM_AUTO_OPEN_AT_ARRIVALS_PER_MINUTE).")
    openAtActive: int | None = Field(
        default=None, ge=1, le=100_000_000,
        description="mode auto: open when this many customers are active at the showtime at once "
                    "(absent: WAITING_ROOM_AUTO_OPEN_AT_ACTIVE).")

    @model_validator(mode="after")
    def one_form(self) -> WaitingRoomUpdate:
        if (self.enabled is None) == (self.mode is None):
            raise ValueError("give either mode (on, off, auto) or enabled, not both")
        if self.enabled is not None and self.activeLimit is None:
            raise ValueError("activeLimit is required with enabled")
        return self


class WaitingRoomStatus(BaseModel):
    """For customers' pages: whether to show the queue before the seat map."""

    showtimeId: int
    enabled: bool
    opensAt: datetime | None
    soldOut: bool


class WaitingRoomAdmin(BaseModel):
    """For operators: the configuration, and the figures of the room's last step (null before its first
    step, or while Redis is unreachable)."""

    showtimeId: int
    enabled: bool
    mode: Literal["on", "off", "auto"]
    activeLimit: int
    opensAt: datetime | None
    openAtArrivalsPerMinute: int  # what an automatic room opens at (the deployment's default if not set)
    openAtActive: int
    changedReason: str | None  # why the room last turned on or off: ARRIVALS, ACTIVE, OPERATOR, RUSH_OVER
    changedAt: datetime | None
    opened: bool | None
    queueLength: int | None
    active: int | None
    admittedTotal: int | None
    admissionRatePerMinute: float | None
    soldOut: bool | None
    seatsAvailable: int | None
    seatsHeld: int | None
    pausedUntil: datetime | None


class QueueTicket(BaseModel):
    ticket: str
    position: int | None  # null before the opening (the shuffle decides then); 0 when already admitted
    soldOut: bool
    opensAt: datetime | None


class QueuePosition(BaseModel):
    admitted: bool
    position: int | None
    estimatedWaitSeconds: int | None
    admissionToken: str | None
    expiresAt: datetime | None
    soldOut: bool
    opensAt: datetime | None
    signIn: bool | None = Field(
        default=None, description="Only on a visitor's ticket (joined without a token), admitted and polled "
                                  "without a token: true, no admissionToken; poll again with a customer's token "
                                  "to claim the place.")
