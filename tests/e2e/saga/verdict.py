"""One invariant's result: how many things it looked at, and every violation found, in words."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .facts import Facts

LIVE = ("RESERVED", "CONFIRMED")


@dataclass
class Check:
    name: str
    rule: str
    checked: int = 0
    violations: list[str] = field(default_factory=list)

    def expect(self, ok: bool, violation: str) -> None:
        self.checked += 1
        if not ok:
            self.violations.append(violation)


def data(event: dict[str, Any]) -> dict[str, Any]:
    return event.get("data") or {}


def by(events: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    """Events grouped by a field of their data (paymentId) or of the envelope (bookingId)."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        grouped[str(data(e).get(key) or e.get(key))].append(e)
    return grouped


def payments_of(facts: Facts) -> dict[str, list[dict[str, Any]]]:
    """booking id -> its payments, oldest first."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in facts.payments.values():
        grouped[p["booking_id"]].append(p)
    return grouped


def confirmed_bookings(facts: Facts) -> dict[str, dict[str, Any]]:
    """booking id -> its (first) BookingConfirmed on the topic."""
    return {booking: events[0] for booking, events in by(facts.of_type("BookingConfirmed"), "bookingId").items()}
